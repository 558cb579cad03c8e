"""Healthy run: a variational autoencoder (MLP encoder to an 8-dimensional Gaussian latent, MLP
decoder with a Sigmoid output) on the 8x8 digit images scaled to [0, 1], trained with Adam on the
summed Bernoulli reconstruction loss plus the KL term, a functional loss recorded with
`hook.record_tensor_value`, validated after every epoch.

No planted problem: the reparameterisation trick, the usual loss, a learning rate Adam likes. The
loss is in the hundreds (a sum over 64 pixels and the batch) and flattens as the model
converges: a converged loss, not a stalled one.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: the validation loss improves from the first pass to the last, the training loss falls by
more than a third, no non-finite value.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class Vae(nn.Module):
    def __init__(self, latent=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 128), nn.ReLU())
        self.mu = nn.Linear(128, latent)
        self.logvar = nn.Linear(128, latent)
        self.dec = nn.Sequential(nn.Linear(latent, 128), nn.ReLU(), nn.Linear(128, 64),
                                 nn.Sigmoid())

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


def vae_loss(recon, x, mu, logvar):
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (bce + kld) / len(x)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=4),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=15)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    images = (load_digits().images.reshape(-1, 64) / 16.0).astype(np.float32)
    order = rng.permutation(len(images))
    x_tr, x_va = torch.from_numpy(images[order[:1437]]), torch.from_numpy(images[order[1437:]])
    loader = DataLoader(TensorDataset(x_tr), batch_size=64, shuffle=True)

    model = Vae()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    hook = make_hook(args.out)
    hook.register_module(model)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for (xb,) in loader:
            optimizer.zero_grad()
            recon, mu, logvar = model(xb)
            loss = vae_loss(recon, xb, mu, logvar)
            hook.record_tensor_value("vae_loss", loss)
            loss.backward()
            optimizer.step()
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        with torch.no_grad():
            recon, mu, logvar = model(x_va)
            val = vae_loss(recon, x_va, mu, logvar)
            hook.record_tensor_value("vae_loss", val)
        print(f"epoch {epoch + 1} train loss {loss.item():.2f} val loss {val.item():.2f}")
    hook.close()


if __name__ == "__main__":
    main()
