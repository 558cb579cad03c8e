"""Healthy run: a convolutional autoencoder on the 8x8 digit images scaled to [0, 1], its decoder
ending in a Sigmoid, trained with Adam on binary cross-entropy, validated after every epoch.

No planted problem. The output Sigmoid saturates on purpose: most pixels of a digit image are
background (0), and a good reconstruction drives the Sigmoid's input far below zero there. That
is what a Sigmoid output layer is for, not a saturated hidden layer.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py, 5 epochs = 115 steps): see
test_programs_plain.py's check: validation loss falls after every epoch, training loss falls by
more than half, no non-finite value.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 8, 3, padding=1), nn.ReLU())
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(8, 16, 2, stride=2), nn.ReLU(),
            nn.Conv2d(16, 1, 3, padding=1), nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=2),
        include_collections=["weights", "biases", "gradients", "losses", "relu_activations",
                             "tanh_sigmoid_activations"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    images = (digits.images.astype(np.float32) / 16.0)[:, None]  # (N, 1, 8, 8) in [0, 1]
    train_loader = DataLoader(TensorDataset(torch.from_numpy(images[tr])), batch_size=64,
                              shuffle=True)
    val_images = torch.from_numpy(images[va])

    model = AutoEncoder()
    criterion = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for (xb,) in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), xb)
            loss.backward()
            optimizer.step()
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        with torch.no_grad():
            val = criterion(model(val_images), val_images).item()
        print(f"epoch {epoch + 1} train loss {loss.item():.4f} val loss {val:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
