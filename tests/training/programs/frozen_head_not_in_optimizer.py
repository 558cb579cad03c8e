"""Digits classifier adapted from a 5-class model: the head is replaced after the optimizer is
built, so the new head is never updated.

Planted problem: a frozen layer by mistake. The script builds the model and its Adam optimizer,
then replaces `model.head` with a fresh 10-class nn.Linear (a common fine-tuning slip). The new
head's parameters are not in the optimizer: they keep their random initial values for the whole
run while the backbone trains around them.

Expected rule: UnchangedTensor (defaults: num_steps=3, rtol=1e-5, atol=1e-8, all saved
tensors), by step 10 at the latest (weights saved every 5 steps: steps 0, 5, 10 are three saved
steps with the same head weight). WeightUpdateRatio also sees it (ratio 0 < 1e-8 at step 5).

Measured with plain PyTorch (tests/training/plain_measure.py, 60 steps): ||w - w_prev|| /
||w_prev|| of head.weight and head.bias is exactly 0 at every step (the backbone's weights move by
0.7 % to 1.9 % per step); the head's gradients are not zero (mean |g| >= 5.5e-3), they are just
never applied. The loss still falls (2.27 -> 1.13) as the backbone adapts to the random head.
"""

import argparse
import os

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class Classifier(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
        self.head = nn.Linear(64, n_classes)

    def forward(self, x):
        return self.head(F.relu(self.backbone(x)))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["weights", "biases", "losses"],
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
    loader = DataLoader(
        TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(digits.target)),
        batch_size=32, shuffle=True)

    model = Classifier(n_classes=5)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    # Now the task has 10 classes: swap the head (too late, the optimizer has the old one).
    model.head = nn.Linear(64, 10)
    criterion = nn.CrossEntropyLoss()

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
