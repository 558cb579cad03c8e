"""A plain PyTorch training loop, with no trainscope in it: an MLP with ReLU and tanh on a
synthetic 4-class task, SGD, nn.CrossEntropyLoss, a validation pass (model.eval(), no_grad)
every 10 steps. Argument: --lr (default 0.1), --steps (default 40)."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--steps", type=int, default=40)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)
teacher = torch.randn(16, 4)
x_all = torch.randn(2048, 16)
y_all = (x_all @ teacher).argmax(1)
x_val, y_val = torch.randn(256, 16), None
y_val = (x_val @ teacher).argmax(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 16)
        self.tanh = nn.Tanh()
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(self.tanh(self.fc2(self.relu(self.fc1(x)))))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for step in range(args.steps):
    idx = torch.randint(0, len(x_all), (64,))
    optimizer.zero_grad()
    loss = criterion(model(x_all[idx]), y_all[idx])
    loss.backward()
    optimizer.step()
    if (step + 1) % 10 == 0:
        model.eval()
        with torch.no_grad():
            val = criterion(model(x_val), y_val).item()
        model.train()
        print(f"step {step + 1} loss {loss.item():.4f} val {val:.4f}", flush=True)
