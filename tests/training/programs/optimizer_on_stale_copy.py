"""Planted problem: the optimizer holds the parameters of a model that is no longer trained. The
script builds the model and its optimizer, then wraps a deep copy of the model (as people do when
they add an EMA copy, or "move" a model with copy.deepcopy before wrapping it) and trains the
copy: the gradients land on the copy's parameters, the optimizer steps the original's, which have
no gradient. Nothing crashes; the loss never improves beyond its noise, the weights never move.

Expected: UnchangedTensor or WeightUpdateRatio (weights that do not move: check that they are in
the optimizer), LossNotDecreasing (not learning).

Measured with plain PyTorch (tests/training/plain_measure.py, 3 epochs = 69 steps): see
test_programs_plain.py's check: the largest relative update of any parameter is 0, the training
loss of the last 10 steps is within 10 % of the first 10 steps'.
"""

import argparse
import copy
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class Classifier(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return self.body(x)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
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
    x = digits.data.astype(np.float32) / 16.0
    y = digits.target
    train_loader = DataLoader(TensorDataset(torch.from_numpy(x[tr]), torch.tensor(y[tr])),
                              batch_size=64, shuffle=True)

    body = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = torch.optim.Adam(body.parameters(), lr=1e-3)
    model = Classifier(copy.deepcopy(body))  # the bug: the optimizer keeps `body`'s parameters
    criterion = nn.CrossEntropyLoss()

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for epoch in range(args.epochs):
        for xb, yb in train_loader:
            optimizer.zero_grad()  # zeroes `body`'s (absent) gradients, not the model's
            model.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
