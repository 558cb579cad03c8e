"""Digits classifier whose images are stored as 8-bit pixels and "normalised" with integer
division.

Planted problem: an all-zero input. The images are kept as uint8 (0..240 here) and the script
scales them with `pixels // 255` (floor division) instead of `pixels / 255`, so every pixel becomes
0. The model sees a batch of zeros at every step and can only learn the class prior.

Expected rule: AllZero with tensor_regex=MLP_input_0 (the model's input; the rule needs the user
to say which tensors to check), default threshold 100 %, at step 0.

Measured with plain PyTorch (tests/training/plain_measure.py, 30 steps): 100 % of the input
values are 0 at every step; the loss stays at 2.31 (first 10 steps) and 2.31 (last 10).
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_regex=["MLP_input_0"],
        include_collections=["losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    pixels = (digits.data * 15).astype(np.uint8)  # 8-bit images, 0..240
    images = torch.from_numpy(pixels)
    x = (images // 255).float()  # bug: floor division
    loader = DataLoader(TensorDataset(x, torch.tensor(digits.target)), batch_size=32, shuffle=True)

    model = MLP()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

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
