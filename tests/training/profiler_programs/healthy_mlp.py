"""Healthy digits MLP: in-memory data, no stalls, no leak (the control of the profiler programs).

300 steps of about 20-40 ms (hidden 1024, batch 128, one thread), data from an in-memory
TensorDataset (a batch in about 1 ms), nothing kept from step to step. No profiler rule should fire:
Dataloader (the loop waits for data well under 50 % of its time), StepOutlier (no step longer
than mean + 3 std more than 10 times), HostMemoryGrowth (the memory is flat after start-up), and
the default profiler rules.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from common import digits_tensors, make_hook, mlp
import trainscope.pytorch as ts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/ts_healthy_mlp")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--hidden", type=int, default=1024)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = digits_tensors()
    loader = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True, drop_last=True)
    model = mlp(args.hidden)
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
            step += 1
            if step >= args.steps:
                break
    print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
