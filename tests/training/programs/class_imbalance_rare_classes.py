"""Digits classifier trained on a data set where "0" has 178 examples and every other digit 12.

Planted problem: an imbalanced training set. The data was "filtered" so that the zeros are kept
in full while the other digits are cut to 12 examples each, so the most frequent class is about
15 times as frequent as the rarest one.

Expected rule: ClassImbalance (defaults: threshold_imbalance=10, samples=500, labels from
tensors matching ".*labels"), by step 20 at the latest: labels are saved every step in batches of
24, so 500 labels are seen at step 20.

Measured with plain PyTorch (tests/training/plain_measure.py, 60 steps): the 502 labels of
steps 0-20 hold 309 zeros and 19 to 24 of every other digit (most / least frequent = 16); over
the 60 steps, 890 zeros and 60 of each other digit (14.8).
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
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    digits = load_digits()
    keep = []
    for c in range(10):
        idx = np.flatnonzero(digits.target == c)
        keep.extend(idx if c == 0 else rng.choice(idx, 12, replace=False))
    keep = np.array(keep)
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    loader = DataLoader(
        TensorDataset(torch.tensor(x[keep], dtype=torch.float32),
                      torch.tensor(digits.target[keep])),
        batch_size=24, shuffle=True)

    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
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
            logits = model(xb)
            loss = criterion(logits, yb)
            loss.backward()
            optimizer.step()
            hook.save_tensor("labels", yb, "labels")
            hook.save_tensor("predictions", logits.argmax(1), "predictions")
            step += 1
            if step >= args.steps:
                break
        print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
