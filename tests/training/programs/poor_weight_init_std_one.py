"""Digits classifier, 4 hidden ReLU layers, whose weights are initialised with
nn.init.normal_(std=1.0).

Planted problem: poor weight initialisation. With 128 inputs per unit and std 1 (He
initialisation would be std sqrt(2/128) = 0.125), each layer multiplies the variance of the
signal by about 64: the pre-activations of the fourth hidden layer are millions of times larger
than those of the first, the logits are in the thousands and the first losses are huge.

Expected rule: PoorWeightInitialization (defaults: threshold=10 on the ratio of the variances
of adjacent layers' ReLU inputs, confirmed on two evaluated steps in a row; the ReLU module is
reused and named "relu", so its inputs are relu_input_0..3), by step 1 at the latest (ReLU inputs
and gradients saved every step).

Measured with plain PyTorch (tests/training/plain_measure.py, 30 steps): variance of the four
ReLU inputs at step 0: 55, 3.4e3, 2.2e5, 1.2e7 (ratios 62, 64, 56 between adjacent layers;
step 1: 49, 3.8e3, 3.1e5, 2.4e7); cross-entropy loss 4.0e4 at step 0, 1.3e3 at step 9.
"""

import argparse
import os

import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class DeepMLP(nn.Module):
    def __init__(self, depth=4, width=128):
        super().__init__()
        self.inp = nn.Linear(64, width)
        self.hidden = nn.ModuleList([nn.Linear(width, width) for _ in range(depth - 1)])
        self.relu = nn.ReLU()
        self.head = nn.Linear(width, 10)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=1.0)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.relu(self.inp(x))
        for layer in self.hidden:
            x = self.relu(layer(x))
        return self.head(x)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    hook = ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["relu_input", "gradients", "losses"],
    )
    hook.get_collection("relu_input").include("relu_input")
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    loader = DataLoader(
        TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(digits.target)),
        batch_size=32, shuffle=True)

    model = DeepMLP()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)

    step = 0
    model.train()
    while step < args.steps:
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            step += 1
            if step >= args.steps:
                break
        print(f"step {step} loss {loss.item():.4g}")
    hook.close()


if __name__ == "__main__":
    main()
