"""Digits MLP whose every 25th step stalls for 0.5 s (a synchronous checkpoint to a slow disk).

Planted problem: periodic stalls. Steps take about 10-30 ms; steps 24, 49, 74, ... also sleep
0.5 s inside the step (after optimizer.step(), before the next forward). That is 4 % of the
steps: rare enough to stand out from the mean + 3 std of all step durations.

Expected rule: StepOutlier (defaults: stddev 3, n_outliers 10). Judging starts after 100 steps;
the 11th outlier after that is the stall of step 374, where it fires.
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from common import digits_tensors, make_hook, mlp
import trainscope.pytorch as ts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/ts_step_stall")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--stall", type=float, default=0.5)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = digits_tensors()
    loader = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True, drop_last=True)
    model = mlp(512)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
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
            if step % args.every == args.every - 1:
                time.sleep(args.stall)  # "checkpoint": the step stalls
            step += 1
            if step >= args.steps:
                break
    print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
