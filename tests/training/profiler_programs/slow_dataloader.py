"""Digits MLP whose Dataset sleeps 10 ms per example (a stand-in for a slow remote storage).

Planted problem: data loading is the bottleneck. With batch 16 and num_workers=0 each batch
takes about 160 ms to load, the step itself a few ms: the training loop waits for data more than
90 % of its time. No I/O wait shows (sleeping is not I/O), so IOBottleneck cannot see it.

Expected rule: Dataloader (wait_threshold 50 %), after `patience` (10) batches.
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from common import digits_tensors, make_hook, mlp
import trainscope.pytorch as ts


class SlowStorage(Dataset):
    def __init__(self, seconds_per_example):
        self.x, self.y = digits_tensors()
        self.delay = seconds_per_example

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        time.sleep(self.delay)  # the storage answers slowly
        return self.x[idx], self.y[idx]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/ts_slow_dataloader")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--delay", type=float, default=0.01)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(SlowStorage(args.delay), batch_size=16, shuffle=True, num_workers=0)
    model = mlp(128)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    step = 0
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
