"""Digits classifier trained with SGD and weight_decay=1.0 (meant: 1e-4).

Planted problem: weights collapsing to zero. With lr=0.1 and weight_decay=1.0 every step
multiplies the weights by 0.9 before the gradient step; the gradients cannot hold them up (they
shrink with the weights of the other layers), so within a few dozen steps every weight matrix has
collapsed to (almost) zero variance and the network outputs a constant.

Expected rule: TensorVariance with collection_names=weights and min_threshold=1e-6 (the rule has
no default thresholds; a freshly initialised layer of this size has variance about 5e-3), by
step 60 at the latest (weights saved every 5 steps).

Measured with plain PyTorch (tests/training/plain_measure.py, 80 steps): variance of
encoder.weight 5.2e-3 at step 0, 6.4e-4 at step 10, 1.1e-5 at step 30, 1.8e-6 at step 40,
7.5e-7 at step 45 (below 1e-6), 7.8e-8 at step 60, 1.1e-8 at step 75; decoder.weight 2.6e-3 ->
7.7e-7 at step 55. The loss climbs back to ln 10 (2.23 over the first 10 steps, 2.30 over the
last 10).
"""

import argparse
import os

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(64, 128)
        self.decoder = nn.Linear(128, 10)

    def forward(self, x):
        return self.decoder(F.relu(self.encoder(x)))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["weights", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=80)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    loader = DataLoader(
        TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(digits.target)),
        batch_size=32, shuffle=True)

    model = TwoLayer()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.0, weight_decay=1.0)

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
            step += 1
            if step >= args.steps:
                break
        print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
