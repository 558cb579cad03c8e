"""Healthy run: a 1-D CNN classifies noisy time series (64 samples, 3 channels) into 4 classes
by the frequency of the sine hidden in them; SiLU, dropout, AdamW, the learning rate cut by
`ReduceLROnPlateau` on the validation loss, 10 epochs, validated every epoch.

No planted problem: standardised series, a learnable task, a plateau schedule as people use it.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: validation accuracy at least 0.9, training loss falls to under a quarter.
"""

import argparse
import math
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


def make_data(n, g):
    cls = torch.randint(0, 4, (n,), generator=g)
    t = torch.arange(64).float()
    freq = (cls.float() + 1) * 2 * math.pi / 32
    phase = torch.rand(n, 3, 1, generator=g) * 2 * math.pi
    x = torch.sin(freq[:, None, None] * t + phase) + torch.randn(n, 3, 64, generator=g)
    return x, cls


def build_model():
    return nn.Sequential(
        nn.Conv1d(3, 16, 5, padding=2), nn.SiLU(), nn.MaxPool1d(2),
        nn.Conv1d(16, 32, 5, padding=2), nn.SiLU(), nn.AdaptiveAvgPool1d(1),
        nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, 4),
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
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x_tr, y_tr = make_data(2000, g)
    x_va, y_va = make_data(400, g)
    loader = DataLoader(TensorDataset(x_tr, y_tr), batch_size=64, shuffle=True)

    model = build_model()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.3, patience=1)
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
            logits = model(x_va)
            val = criterion(logits, y_va).item()
            hook.save_tensor("labels", y_va)
            hook.save_tensor("predictions", logits)
        schedule.step(val)
        acc = (logits.argmax(1) == y_va).float().mean().item()
        print(f"epoch {epoch + 1} loss {loss.item():.4f} val loss {val:.4f} accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
