"""Faulty run: a custom module calls `.detach()` on its encoder's output (copied from a GAN or
a target-network snippet), which cuts the encoder off the graph: its two layers never get a
gradient and keep their random initial weights, while the head on top of them trains. The loss
falls somewhat (a linear head on random features), and the model stays far worse than it should.

Expected: UnchangedTensor on the encoder's weights.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: the encoder's parameters never change and have no gradient; the head's change at every
step.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        features = self.encoder(x).detach()  # the bug: no gradient reaches the encoder
        return self.head(features)


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
    tr = order[:1437]
    x = torch.from_numpy((digits.data.astype(np.float32) / 16.0 - 0.3) / 0.4)
    y = torch.from_numpy(digits.target)
    loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=64, shuffle=True)

    model = Classifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    hook.set_mode(ts.modes.TRAIN)
    for epoch in range(args.epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
