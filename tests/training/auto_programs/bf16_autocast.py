"""bf16 mixed precision on the CPU, with no trainscope in it: the forward pass and the loss under
torch.autocast("cpu", dtype=torch.bfloat16), AdamW."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()

torch.manual_seed(4)
torch.set_num_threads(1)
teacher = torch.randn(16, 4)
x_all = torch.randn(2048, 16)
y_all = (x_all @ teacher).argmax(1)

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()

for step in range(args.steps):
    idx = torch.randint(0, len(x_all), (64,))
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = criterion(model(x_all[idx]), y_all[idx])
    loss.backward()
    optimizer.step()
print("done", flush=True)
