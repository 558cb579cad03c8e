"""Digits MLP that reads each batch itself, without a DataLoader, from a slow store (80 ms).

Planted problem: the loop is the bottleneck. Each step fetches its batch in the loop (a stand-in
for a request to remote storage or a slow decode done inline), which takes about 80 ms; the model
takes a few ms. No DataLoader is involved, so no DataLoaderIter wait is recorded, and no I/O wait
shows (sleeping is not I/O).

Expected rule: Dataloader (its check of the loop's time outside the model's spans and any
DataLoader: more than wait_threshold 50 % and loop_ms_threshold 10 ms a step).
"""

import argparse
import time

import torch
from torch import nn

from common import digits_tensors, make_hook, mlp
import trainscope.pytorch as ts


def fetch(x, y, step, batch):
    time.sleep(0.08)  # the store answers slowly
    idx = torch.arange(step * batch, (step + 1) * batch) % len(y)
    return x[idx], y[idx]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/ts_batches_in_the_loop")
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = digits_tensors()
    model = mlp(512)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step in range(args.steps):
        xb, yb = fetch(x, y, step, 64)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"step {args.steps} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
