"""Healthy run, long and noisy: an MLP on the digit images where 20 % of the training labels are
replaced by random ones (noisy annotation, as in many real data sets), batches of 16, plain SGD
at a constant learning rate, 1,500 steps, validated on clean labels every 300 steps.

No planted problem. The training loss cannot fall below the noise (about 1.0 here) and jumps from
batch to batch; after the first few hundred steps it wanders around that floor for a long time.
The model still generalises (clean validation accuracy above 0.9): converged, not stalled.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: the clean validation loss at the last pass under 0.5 (0.36; the program prints an accuracy
of 0.97), the mean training loss of the last 200 steps under 60 % of the first 20's (about 1.0
against 2.3).
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

import trainscope.pytorch as ts


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["weights", "biases", "gradients", "losses", "relu_output"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    x = torch.from_numpy((digits.data.astype(np.float32) / 16.0 - 0.3) / 0.4)
    y = torch.from_numpy(digits.target)
    noisy = y.clone()
    flip = torch.from_numpy(rng.random(len(y)) < 0.2)
    noisy[flip] = torch.from_numpy(rng.integers(0, 10, int(flip.sum())))

    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    train_idx = torch.from_numpy(tr)
    for step in range(args.steps):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        idx = train_idx[torch.randint(0, len(train_idx), (16,))]
        optimizer.zero_grad()
        loss = criterion(model(x[idx]), noisy[idx])
        loss.backward()
        optimizer.step()
        if (step + 1) % 300 == 0:
            hook.set_mode(ts.modes.EVAL)
            model.eval()
            with torch.no_grad():
                logits = model(x[va])
                val = criterion(logits, y[va]).item()
            acc = (logits.argmax(1) == y[va]).float().mean().item()
            print(f"step {step + 1} loss {loss.item():.4f} val loss {val:.4f} accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
