"""Planted problem: the inputs and the labels are shuffled separately (two calls to
rng.shuffle, one on the images and one on the labels, a bug people make when they shuffle a
dataset "by hand"), so no label belongs to its image. A digits MLP trained with Adam cannot learn
anything: the training loss stays near log(10) = 2.30 and the validation accuracy near chance.

Expected: LossNotDecreasing (not learning from the start).

Measured with plain PyTorch (tests/training/plain_measure.py, 4 epochs = 92 steps): see
test_programs_plain.py's check: the mean training loss of the last 10 steps is above 2.1, the
validation accuracy below 0.25.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

import trainscope.pytorch as ts


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
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
    x = digits.data.astype(np.float32) / 16.0
    y = digits.target.copy()
    rng.shuffle(x)  # the bug: the rows of x move, the labels do not move with them
    rng.shuffle(y)
    x_tr, y_tr, x_va, y_va = x[:1437], y[:1437], x[1437:], y[1437:]

    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    hook.set_mode(ts.modes.TRAIN)
    for epoch in range(args.epochs):
        order = rng.permutation(len(y_tr))
        for i in range(0, len(order) - 63, 64):
            idx = order[i:i + 64]
            xb, yb = torch.from_numpy(x_tr[idx]), torch.from_numpy(y_tr[idx])
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1} loss {loss.item():.4f}")
    hook.set_mode(ts.modes.EVAL)
    with torch.no_grad():
        labels = torch.from_numpy(y_va)
        logits = model(torch.from_numpy(x_va))
        criterion(logits, labels)
        hook.save_tensor("labels", labels)
        hook.save_tensor("predictions", logits)
    print(f"validation accuracy {(logits.argmax(1) == labels).float().mean().item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
