"""Faulty run: the model ends in `nn.Softmax(dim=1)` and is trained with `nn.CrossEntropyLoss`,
which applies log-softmax itself: softmax twice. The loss sees probabilities in [0, 1] as logits,
so it can never go below -log(e / (e + 9)) = 1.46 for 10 classes, and its gradient through the
first softmax is small; plain SGD at a learning rate that trains the same model without the
Softmax in a few hundred steps leaves the loss barely below its start.

Expected: LossNotDecreasing ("not learning") within the first 100 steps.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: the training loss of the last 20 steps is above 1.9 (the floor is 1.46; the same model
without the Softmax reaches under 0.3 in as many steps).
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


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
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--no-bug", action="store_true", help="leave the Softmax out")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr = order[:1437]
    x = torch.from_numpy((digits.data.astype(np.float32) / 16.0 - 0.3) / 0.4)
    y = torch.from_numpy(digits.target)
    loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=32, shuffle=True)

    layers = [nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)]
    if not args.no_bug:
        layers.append(nn.Softmax(dim=1))  # the bug: CrossEntropyLoss applies it again
    model = nn.Sequential(*layers)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
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
