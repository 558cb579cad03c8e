"""A torch.compile'd model, with no trainscope in it: the plain loop's MLP compiled once, SGD,
nn.CrossEntropyLoss."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()

torch.manual_seed(3)
torch.set_num_threads(1)
teacher = torch.randn(16, 4)
x_all = torch.randn(2048, 16)
y_all = (x_all @ teacher).argmax(1)

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 4))
model = torch.compile(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

for step in range(args.steps):
    idx = torch.randint(0, len(x_all), (64,))
    optimizer.zero_grad()
    loss = criterion(model(x_all[idx]), y_all[idx])
    loss.backward()
    optimizer.step()
print("done", flush=True)
