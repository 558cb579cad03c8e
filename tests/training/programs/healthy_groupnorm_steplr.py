"""Healthy run: a CNN with GroupNorm and SiLU (no BatchNorm: GroupNorm does not depend on the
batch) on the digit images, SGD with Nesterov momentum and weight decay, the learning rate divided
by 5 every 3 epochs (`StepLR`, stepped once per epoch as documented), 8 epochs, validated after
every epoch.

No planted problem: each drop of the learning rate makes the updates smaller on purpose, and the
loss flattens at the low learning rate: that is the schedule working.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: validation accuracy at least 0.95, training loss falls to under a quarter.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


def build_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.GroupNorm(8, 32), nn.SiLU(),
        nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32 * 4, 10),
    )


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
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    images = digits.images.astype(np.float32)
    images = ((images - images[tr].mean()) / images[tr].std())[:, None]
    x, y = torch.from_numpy(images), torch.from_numpy(digits.target)
    loader = DataLoader(TensorDataset(x[tr], y[tr]), batch_size=64, shuffle=True)

    model = build_model()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.2)
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
        schedule.step()
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
