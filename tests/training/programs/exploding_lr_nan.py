"""House-price style regression: an MLP on unscaled dollar targets, trained with SGD at lr=0.05.

Planted problem: a learning rate far too large for the scale of the loss. The targets are prices
in thousands (about 50 to 500) and are not standardised, so the first MSE gradients are in the
hundreds; SGD at lr=0.05 overshoots, the weights grow geometrically, the loss overflows to inf
and then the weights and gradients become NaN.

Expected rule: ExplodingTensor (defaults: any NaN or infinity in any saved tensor), by step 10
at the latest (losses are saved every step, weights and gradients every 2 steps).

Measured with plain PyTorch (tests/training/plain_measure.py, 40 steps): MSE loss 6.6e4 at
step 0, 1.6e5, 5.8e4, 3.9e14 at step 3, inf at step 4 (with infinite head gradients), NaN from
step 5 on, where every weight of the first Linear is NaN too.
"""

import argparse
import os

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class PriceModel(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, 64), nn.ReLU(),
                                  nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 1)

    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    hook = ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=2),
        include_collections=["weights", "gradients", "losses"],
    )
    hook.get_collection("losses").save_config = ts.SaveConfig(save_interval=1)
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    # Synthetic houses: area, rooms, age, distance to centre (standardised), price in $1000s.
    n = 2000
    feats = rng.normal(size=(n, 4)).astype(np.float32)
    price = 250 + 80 * feats[:, 0] + 30 * feats[:, 1] - 20 * feats[:, 2] - 40 * feats[:, 3]
    price = (price + rng.normal(scale=15, size=n)).astype(np.float32)
    loader = DataLoader(TensorDataset(torch.from_numpy(feats), torch.from_numpy(price)),
                        batch_size=32, shuffle=True)

    model = PriceModel(4)
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)

    step = 0
    model.train()
    while step < args.steps:
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            if step % 5 == 0:
                print(f"step {step} loss {loss.item():.4g}")
            step += 1
            if step >= args.steps:
                break
    hook.close()


if __name__ == "__main__":
    main()
