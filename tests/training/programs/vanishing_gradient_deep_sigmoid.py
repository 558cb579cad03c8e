"""Digits classifier: a 12-layer sigmoid MLP in nn.Sequential, trained with SGD.

Planted problem: vanishing gradients. Every hidden layer is Linear + Sigmoid with PyTorch's
default initialisation; the sigmoid's derivative is at most 0.25, so the gradient shrinks by
roughly 10x per layer on its way back, and the first layers get almost nothing.

Expected rule: VanishingGradient (default threshold 1e-7 on mean |gradient|), at step 0 at the
latest: the first layer's gradient is already below the threshold on the first step.

Measured with plain PyTorch (tests/training/plain_measure.py, 60 steps): mean |gradient| at
step 0 falls by about 7x per layer, from 8.4e-3 (last Linear's weight) through 3.0e-8 (the 7th
Linear, Sequential_12.weight) to 1.2e-12 (first Linear, Sequential_0.weight); the 7 first Linear
layers' weights and biases stay below 1e-7 at every step (smallest 9.0e-13). The loss does not
move: 2.32 over the first 10 steps, 2.33 over the last 10 (ln 10 = 2.30).
"""

import argparse
import os

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
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    data = TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(digits.target))
    loader = DataLoader(data, batch_size=64, shuffle=True)

    layers = []
    width = 64
    for _ in range(12):
        layers += [nn.Linear(width, 64), nn.Sigmoid()]
        width = 64
    layers.append(nn.Linear(64, 10))
    model = nn.Sequential(*layers)

    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

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
        print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
