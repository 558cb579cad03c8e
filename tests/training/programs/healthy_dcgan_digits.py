"""Healthy run: a small DCGAN on the 8x8 digit images scaled to [-1, 1]: a generator of
transposed convolutions with BatchNorm and ReLU ending in Tanh, a discriminator of strided
convolutions with LeakyReLU, each with its own Adam (lr 2e-4, betas 0.5/0.999 as the DCGAN paper),
`BCEWithLogitsLoss`, 600 steps; the hook is registered on both networks and both losses are
recorded.

No planted problem. A GAN's losses are a game, not a descent: the generator's loss rises while
the discriminator learns and they settle into an equilibrium. The generator's last Tanh saturates
on the background pixels (-1) the data has.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: no non-finite value; the generated images' pixel mean is within 0.3 of the data's.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

import trainscope.pytorch as ts

Z = 16


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(Z, 32 * 2 * 2)
        self.net = nn.Sequential(
            nn.BatchNorm2d(32), nn.ReLU(),
            nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.ConvTranspose2d(16, 1, 4, stride=2, padding=1), nn.Tanh(),
        )

    def forward(self, z):
        return self.net(self.fc(z).view(-1, 32, 2, 2))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(16, 32, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(1)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=600)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    images = torch.from_numpy(load_digits().images.astype(np.float32) / 8.0 - 1.0)[:, None]
    gen, disc = Generator(), Discriminator()
    criterion = nn.BCEWithLogitsLoss()
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
    hook = make_hook(args.out)
    hook.register_module(gen)
    hook.register_module(disc)

    ones, zeros = torch.ones(64), torch.zeros(64)
    for step in range(args.steps):
        real = images[torch.randint(0, len(images), (64,))]
        fake = gen(torch.randn(64, Z))
        opt_d.zero_grad()
        d_loss = criterion(disc(real), ones) + criterion(disc(fake.detach()), zeros)
        hook.record_tensor_value("d_loss", d_loss)
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = criterion(disc(fake), ones)
        hook.record_tensor_value("g_loss", g_loss)
        g_loss.backward()
        opt_g.step()
        if (step + 1) % 100 == 0:
            print(f"step {step + 1} d loss {d_loss.item():.3f} g loss {g_loss.item():.3f} "
                  f"fake mean {fake.mean().item():.3f} real mean {real.mean().item():.3f}")
    with torch.no_grad():
        gen.eval()
        hook.save_tensor("generated_mean", gen(torch.randn(256, Z)).mean().reshape(1))
    hook.close()


if __name__ == "__main__":
    main()
