"""Healthy run: an MLP on the digit images compiled with `torch.compile` (the default inductor
backend), the hook registered on the module before compiling it, as PyTorch 2 users write it;
Adam, 3 epochs, evaluated at the end.

No planted problem: the compiled model computes what the eager one does.

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


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=2),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    x = torch.from_numpy((digits.data.astype(np.float32) / 16.0 - 0.3) / 0.4)
    y = torch.from_numpy(digits.target)
    loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=64, shuffle=True,
                        drop_last=True)

    model = Mlp()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    compiled = torch.compile(model)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(compiled(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1} loss {loss.item():.4f}")
    hook.set_mode(ts.modes.EVAL)
    model.eval()
    with torch.no_grad():
        logits = model(x[va])
        val = criterion(logits, y[va]).item()
        hook.save_tensor("labels", y[va])
        hook.save_tensor("predictions", logits)
    acc = (logits.argmax(1) == y[va]).float().mean().item()
    print(f"validation loss {val:.4f} accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
