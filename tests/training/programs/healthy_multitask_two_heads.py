"""Healthy run: multi-task learning. A shared trunk feeds two heads: the digit's class
(cross-entropy) and the image's ink coverage, the share of pixels above half intensity (mean
squared error); the loss is their weighted sum; both loss modules are registered. Adam, 4 epochs,
validated every epoch.

No planted problem: two tasks of different scales summed with a weight, as people do.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: validation accuracy at least 0.95, both losses fall.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU())
        self.classify = nn.Linear(64, 10)
        self.coverage = nn.Linear(64, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.classify(h), self.coverage(h).squeeze(1)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=2),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    raw = digits.data.astype(np.float32) / 16.0
    x = torch.from_numpy((raw - 0.3) / 0.4)
    y = torch.from_numpy(digits.target)
    cover = torch.from_numpy((raw > 0.5).mean(1).astype(np.float32) * 4)
    loader = DataLoader(TensorDataset(x[tr], y[tr], cover[tr]), batch_size=64, shuffle=True)

    model = TwoHeads()
    ce, mse = nn.CrossEntropyLoss(), nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(ce)
    hook.register_loss(mse)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb, cb in loader:
            optimizer.zero_grad()
            logits, cov = model(xb)
            loss = ce(logits, yb) + 0.5 * mse(cov, cb)
            loss.backward()
            optimizer.step()
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        with torch.no_grad():
            logits, cov = model(x[va])
            val_ce, val_mse = ce(logits, y[va]).item(), mse(cov, cover[va]).item()
            hook.save_tensor("labels", y[va])
            hook.save_tensor("predictions", logits)
        acc = (logits.argmax(1) == y[va]).float().mean().item()
        print(f"epoch {epoch + 1} loss {loss.item():.4f} val ce {val_ce:.4f} val mse "
              f"{val_mse:.4f} accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
