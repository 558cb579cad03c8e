"""Planted problem: a learning rate a thousand times too low. A digits MLP (64-128-64-10, ReLU)
trained with plain SGD at lr=1e-4 (1e-1 trains it in one epoch): after 4 epochs the loss has
barely moved from where it started and the validation accuracy is far from what the model reaches.

Expected: LossNotDecreasing (the loss does not fall from the start: not learning), with advice
that names the learning rate; WeightUpdateRatio may add that the updates are tiny.

Measured with plain PyTorch (tests/training/plain_measure.py, 4 epochs = 92 steps): see
test_programs_plain.py's check: the training loss of the last 10 steps is within 5 % of the
first 10 steps', the relative weight update per step stays below 1e-4.
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
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-4)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    digits = load_digits()
    order = rng.permutation(len(digits.target))
    tr, va = order[:1437], order[1437:]
    x = digits.data.astype(np.float32)
    x = (x - x[tr].mean(0)) / (x[tr].std(0) + 1e-6)
    y = digits.target
    train_loader = DataLoader(TensorDataset(torch.from_numpy(x[tr]), torch.tensor(y[tr])),
                              batch_size=64, shuffle=True)

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    hook.set_mode(ts.modes.TRAIN)
    for epoch in range(args.epochs):
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1} loss {loss.item():.4f}")
    hook.set_mode(ts.modes.EVAL)
    with torch.no_grad():
        labels = torch.tensor(y[va])
        logits = model(torch.from_numpy(x[va]))
        criterion(logits, labels)
        hook.save_tensor("labels", labels)
        hook.save_tensor("predictions", logits)
    print(f"validation accuracy {(logits.argmax(1) == labels).float().mean().item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
