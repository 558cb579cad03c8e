"""A small CNN fed raw 0-255 pixel values (no ToTensor scaling, no Normalize), with no trainscope
in it: the planted problem CheckInputImages names. Synthetic 3-channel 16x16 images whose class
is the brightest channel; SGD at a small learning rate so that the raw scale does not blow the
training up. Arguments: --steps."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return self.fc(x.mean(dim=(2, 3)))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
g = torch.Generator().manual_seed(1)
for step in range(args.steps):
    y = torch.randint(0, 3, (32,), generator=g)
    x = torch.randint(0, 160, (32, 3, 16, 16), generator=g).float()
    x[torch.arange(32), y] += 95.0  # the labelled channel is brighter
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
print("done", flush=True)
