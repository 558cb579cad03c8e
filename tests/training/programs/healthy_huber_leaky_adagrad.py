"""Healthy run: a regression MLP with LeakyReLU and ELU hidden layers on scikit-learn's Friedman #1
problem (10 standardised features, 5 of them irrelevant, noise), the Huber loss
(`nn.SmoothL1Loss`), Adagrad, 25 epochs, validated every 5 epochs.

No planted problem. The target has noise of standard deviation 1 (0.2 after scaling), so the
loss converges to a floor set by the noise and cannot reach zero: converged, not stalled.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: the validation loss at the last pass is under a third of the first training steps' loss.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import make_friedman1
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 64), nn.LeakyReLU(0.1), nn.Linear(64, 64),
                                  nn.ELU())
        self.out = nn.Linear(64, 1)

    def forward(self, x):
        return self.out(self.body(x)).squeeze(1)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=25)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = make_friedman1(n_samples=2000, noise=1.0, random_state=0)
    x = ((x - x[:1600].mean(0)) / x[:1600].std(0)).astype(np.float32)
    y = ((y - y[:1600].mean()) / y[:1600].std()).astype(np.float32)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    loader = DataLoader(TensorDataset(x[:1600], y[:1600]), batch_size=32, shuffle=True)

    model = Regressor()
    criterion = nn.SmoothL1Loss()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        if (epoch + 1) % 5 == 0:
            hook.set_mode(ts.modes.EVAL)
            model.eval()
            with torch.no_grad():
                val = criterion(model(x[1600:]), y[1600:]).item()
            print(f"epoch {epoch + 1} loss {loss.item():.4f} val loss {val:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
