"""Digits MLP that keeps every batch's hidden features "for a t-SNE plot at the end".

Planted problem: a host-memory leak in the training loop. Each step appends the hidden
activations of its batch (1024 x 1024 float32, 4 MiB, detached) to a list that is never
cleared: about 40 MiB/s at ~10 steps/s, steadily, for the whole run.

Expected rule: HostMemoryGrowth (with warmup_seconds=8 for this short run; the default 60 s
warm-up is longer than the whole program), once the later half of the judged samples shows the
growth (about 15 s into the run).
"""

import argparse
import time

import torch
from torch import nn

from common import digits_tensors, make_hook
import trainscope.pytorch as ts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/ts_memory_leak")
    parser.add_argument("--steps", type=int, default=220)
    parser.add_argument("--leak", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = digits_tensors()
    body = nn.Sequential(nn.Linear(64, 1024), nn.ReLU())
    head = nn.Linear(1024, 10)
    model = nn.Sequential(body, head)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    kept = []
    g = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        idx = torch.randint(0, len(y), (1024,), generator=g)
        xb, yb = x[idx], y[idx]
        optimizer.zero_grad()
        features = body(xb)
        loss = criterion(head(features), yb)
        loss.backward()
        optimizer.step()
        if args.leak:
            kept.append(features.detach().clone())  # the leak: never released
        time.sleep(0.08)  # the rest of a real step (logging, metrics)
    print(f"step {args.steps} loss {loss.item():.4f} kept {len(kept)} batches")
    hook.close()


if __name__ == "__main__":
    main()
