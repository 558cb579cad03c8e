"""Faulty run: `StepLR(step_size=1, gamma=0.7)` meant per epoch is stepped after every batch, so
the learning rate is halved every 2 batches: 0.02 at the start, 2e-9 after one epoch (45 steps).
The model barely starts to learn before its weights freeze, with the loss still near ln 10,
where the same training with the schedule stepped per epoch learns the digits.

Expected: WeightUpdateRatio (updates far too small against the weights) once the learning rate
has decayed, within the first 100 steps.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: after step 80 no weight changes by more than 1e-8 of its norm between steps, and the
final training loss is above 0.5.
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
    parser.add_argument("--epochs", type=int, default=4)
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

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
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
            schedule.step()  # the bug: this schedule was meant to be stepped once per epoch
        print(f"epoch {epoch + 1} loss {loss.item():.4f} lr {schedule.get_last_lr()[0]:.3g}")
    hook.close()


if __name__ == "__main__":
    main()
