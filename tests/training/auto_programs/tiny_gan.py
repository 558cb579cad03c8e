"""A tiny GAN, with no trainscope in it: two models, two Adam optimizers, nn.BCELoss, the
discriminator trained on real and generated (no_grad) samples, then the generator."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()

torch.manual_seed(2)
torch.set_num_threads(1)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


netG, netD = Generator(), Discriminator()
optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
criterion = nn.BCELoss()
ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)

for step in range(args.steps):
    real = torch.randn(64, 2) * 0.1 + torch.tensor([0.5, -0.5])
    with torch.no_grad():
        fake = netG(torch.randn(64, 8))
    optD.zero_grad()
    lossD = criterion(netD(real), ones) + criterion(netD(fake), zeros)
    lossD.backward()
    optD.step()

    optG.zero_grad()
    lossG = criterion(netD(netG(torch.randn(64, 8))), ones)
    lossG.backward()
    optG.step()
print("done", flush=True)
