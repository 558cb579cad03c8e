"""Gradient accumulation, with no trainscope in it: 4 micro-batches per optimizer step, the
loss from torch.nn.functional (no loss module), Adam. Argument: --steps (optimizer steps)."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()

torch.manual_seed(1)
torch.set_num_threads(1)
teacher = torch.randn(16, 4)
x_all = torch.randn(2048, 16)
y_all = (x_all @ teacher).argmax(1)

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16), nn.Sigmoid(),
                      nn.Linear(16, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
ACCUMULATE = 4

for step in range(args.steps):
    for micro in range(ACCUMULATE):
        idx = torch.randint(0, len(x_all), (16,))
        loss = F.cross_entropy(model(x_all[idx]), y_all[idx]) / ACCUMULATE
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
print("done", flush=True)
