"""Digits classifier with one wide hidden layer whose biases start at -10.

Planted problem: dead ReLUs. The author initialises the hidden biases to a large negative
constant (meaning to make the layer "sparse"); with standardised inputs the pre-activations
w.x + b stay around -10 +- 1, so no hidden unit is ever positive, the ReLU passes no gradient and
the layer can never recover. Only the output layer's bias learns (the class prior).

Expected rule: DeadRelu (defaults: a unit is dead if active in < 1 % of samples, the rule fires
when > 50 % of a layer is dead; it needs >= 100 samples), by step 1 at the latest (batches of 64,
relu outputs saved every step).

Measured with plain PyTorch (tests/training/plain_measure.py, 40 steps): 100 % of the 256 hidden
units are inactive (never > 0) in every window of >= 100 samples, from the first window (step 1)
to the end; the gradients of the hidden layer and of the classifier's weight are exactly 0 at
every step; the loss stays at 2.303 (first 10 steps) and 2.303 (last 10).
"""

import argparse
import os

import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class DigitNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(64, 256)
        self.relu = nn.ReLU()
        self.classifier = nn.Linear(256, 10)
        # "Sparse" start: most units off at first.
        nn.init.constant_(self.hidden.bias, -10.0)

    def forward(self, x):
        return self.classifier(self.relu(self.hidden(x)))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    hook = ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["relu_output", "losses"],
    )
    hook.get_collection("relu_output").include("relu_output")
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    loader = DataLoader(
        TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(digits.target)),
        batch_size=64, shuffle=True)

    model = DigitNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    step = 0
    while step < args.steps:
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            step += 1
            if step >= args.steps:
                break
        print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
