"""Healthy run: a small GAN learning a 1-D Gaussian (mean 3, std 0.5) from 4-D noise. Generator
and discriminator are MLPs with LeakyReLU, each with its own Adam optimizer and its own
BCEWithLogitsLoss, 300 alternating steps, as in DCGAN-style training.

No planted problem. GAN losses are not meant to decrease: the discriminator's loss hovers around
ln 4 = 1.39 when the game is balanced and the generator's moves against it.

Expected rules: none.

Measured with plain PyTorch: the mean of 1000 generated samples ends within 0.5 of 3 and their
standard deviation between 0.2 and 1.5 (test_programs_plain.py).
"""

import argparse
import os

import torch
from torch import nn

import trainscope.pytorch as ts


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = nn.Sequential(nn.Linear(4, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
        self.discriminator = nn.Sequential(nn.Linear(1, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, z, real):
        fake = self.generator(z)
        return fake, self.discriminator(torch.cat([real, fake.detach()]))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights", "biases", "gradients", "losses"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    torch.manual_seed(5)
    torch.set_num_threads(1)
    gan = GAN()
    d_loss_fn = nn.BCEWithLogitsLoss()
    g_loss_fn = nn.BCEWithLogitsLoss()
    opt_d = torch.optim.Adam(gan.discriminator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(gan.generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    hook = make_hook(args.out)
    hook.register_module(gan)
    hook.register_loss(d_loss_fn)
    hook.register_loss(g_loss_fn)
    hook.set_mode(ts.modes.TRAIN)
    n = 64
    labels = torch.cat([torch.ones(n, 1), torch.zeros(n, 1)])
    for step in range(args.steps):
        real = torch.randn(n, 1) * 0.5 + 3.0
        fake, d_out = gan(torch.randn(n, 4), real)
        opt_d.zero_grad()
        d_loss = d_loss_fn(d_out, labels)
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = g_loss_fn(gan.discriminator(fake), torch.ones(n, 1))
        g_loss.backward()
        opt_g.step()
    with torch.no_grad():
        samples = gan.generator(torch.randn(1000, 4))
    hook.save_tensor("generated", samples)
    print(f"d_loss {d_loss.item():.3f} g_loss {g_loss.item():.3f} "
          f"generated mean {samples.mean().item():.3f} std {samples.std().item():.3f}")
    hook.close()


if __name__ == "__main__":
    main()
