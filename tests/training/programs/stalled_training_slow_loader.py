"""Digits training whose data loading hangs for a few seconds in the middle of the run.

Planted problem: a stalled training. The Dataset reads each example through a "storage" call;
at example 500 the storage hangs for --stall-seconds (default 5 s; a stand-in for a network file
system or object store that stops answering). No step is taken, so no new step appears in the
trial, while the process is alive and has not ended.

Expected rule: StalledTrainingRule with threshold=2 (seconds; the default is 1800), fired while
the run hangs, at the step before the hang at the latest (step 15: the batch of 32 holding
example 500 is the 16th; the last completed step whose files are written during the hang is
step 14 or 15). It needs the rule to run beside the training, as `trainscope run` does: once
the training has ended a stall is no longer reported.

Measured with plain PyTorch (tests/training/plain_measure.py, 30 steps): the steps come
0.03-0.08 s apart, except between step 14 and step 15: 5.02 s. Under trainscope a step's files
are written when the next step starts, so during the hang the newest complete step is 13.
"""

import argparse
import os
import time

import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, Dataset

import trainscope.pytorch as ts


class DigitsFromStorage(Dataset):
    def __init__(self, stall_at, stall_seconds):
        digits = load_digits()
        x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
        self.x = torch.tensor(x, dtype=torch.float32)
        self.y = torch.tensor(digits.target)
        self.stall_at = stall_at
        self.stall_seconds = stall_seconds

    def __len__(self):
        return len(self.y)

    def _read(self, idx):
        if idx == self.stall_at and self.stall_seconds > 0:
            time.sleep(self.stall_seconds)  # the storage stops answering for a while
            self.stall_seconds = 0
        return self.x[idx], self.y[idx]

    def __getitem__(self, idx):
        return self._read(idx)


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
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--stall-seconds", type=float, default=5.0)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    data = DigitsFromStorage(stall_at=500, stall_seconds=args.stall_seconds)
    loader = DataLoader(data, batch_size=32, shuffle=False)
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
