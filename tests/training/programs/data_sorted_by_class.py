"""Faulty run: the training set is sorted by label (as it came from a folder per class) and the
`DataLoader` is built with `shuffle=False`, so each epoch shows the model all the 0s, then all
the 1s, ... then all the 9s. Every stretch of one class pulls the model towards predicting that
class; at the end of each epoch it predicts mostly the last classes it saw.

Expected: Confusion at the evaluation after the second epoch (most classes are rarely predicted
right: their recall is far below 0.9).

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: at every evaluation pass at least 4 classes have a recall under 0.5, while the same model
trained on shuffled data (healthy_digits_mlp.py) recalls every class at 0.9 or more.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


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
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    tr = tr[np.argsort(digits.target[tr], kind="stable")]  # the bug: sorted by class ...
    x = torch.from_numpy((digits.data.astype(np.float32) / 16.0 - 0.3) / 0.4)
    y = torch.from_numpy(digits.target)
    loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=32, shuffle=False)  # ... kept

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        with torch.no_grad():
            logits = model(x[va])
            val = criterion(logits, y[va]).item()
            hook.save_tensor("labels", y[va])
            hook.save_tensor("predictions", logits)
        acc = (logits.argmax(1) == y[va]).float().mean().item()
        print(f"epoch {epoch + 1} loss {loss.item():.4f} val loss {val:.4f} accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
