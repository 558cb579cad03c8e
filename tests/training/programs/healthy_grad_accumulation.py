"""Healthy run: an MLP on the digit images with gradient accumulation, as people train with a
memory budget: micro-batches of 16, the loss divided by 4, `optimizer.step()` and `zero_grad()`
every 4 micro-batches (an effective batch of 64), SGD with momentum, 4 epochs.

No planted problem. With the hook in the script a step is one forward pass of the model (smdebug's
step), so three of every four steps change no weight: that is accumulation, not a frozen model.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: validation accuracy at least 0.95, training loss falls to under a quarter.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts

ACCUMULATE = 4


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=3),
        include_collections=["weights", "biases", "gradients", "losses", "relu_output"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    x = torch.from_numpy((digits.data.astype(np.float32) / 16.0 - 0.3) / 0.4)
    y = torch.from_numpy(digits.target)
    loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=16, shuffle=True)

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        optimizer.zero_grad()
        for i, (xb, yb) in enumerate(loader):
            loss = criterion(model(xb), yb)
            (loss / ACCUMULATE).backward()
            if (i + 1) % ACCUMULATE == 0:
                optimizer.step()
                optimizer.zero_grad()
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        with torch.no_grad():
            logits = model(x[va])
            val = criterion(logits, y[va]).item()
            hook.save_tensor("labels", y[va])
            hook.save_tensor("predictions", logits)
        acc = (logits.argmax(1) == y[va]).float().mean().item()
        print(f"epoch {epoch + 1} loss {loss.item():.4f} val loss {val:.4f} accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
