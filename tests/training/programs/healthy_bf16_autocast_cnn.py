"""Healthy run: a small CNN on the 8x8 digit images under mixed precision on the CPU
(`torch.autocast("cpu", dtype=torch.bfloat16)` around the forward pass and the loss), fp32
master weights, Adam, 4 epochs, evaluated under autocast at the end.

No planted problem: bf16 autocast as PyTorch documents it for CPUs. The activations the hook sees
are bf16 (8 significant bits): their statistics are coarser than fp32's, not wrong.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: validation accuracy at least 0.95, training loss falls to under a quarter, no non-finite
value.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.pool(self.relu(self.conv2(x)))
        return self.fc(x.flatten(1))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=2),
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
    images = (digits.images.astype(np.float32) / 16.0 - 0.3) / 0.4
    x = torch.from_numpy(images[:, None])
    y = torch.from_numpy(digits.target)
    loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=64, shuffle=True)

    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1} loss {loss.item():.4f}")
    hook.set_mode(ts.modes.EVAL)
    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x[va])
        val = criterion(logits, y[va]).item()
        hook.save_tensor("labels", y[va])
        hook.save_tensor("predictions", logits.float())
    acc = (logits.argmax(1) == y[va]).float().mean().item()
    print(f"validation loss {val:.4f} accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
