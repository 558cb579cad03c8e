"""Digits classifier trained for 30 epochs on 300 examples with no early stopping.

Planted problem: overtraining. The validation loss reaches its best after a handful of epochs
and then creeps up while the training loss keeps falling; the script has no early stopping and
keeps training (and evaluating after every epoch) for 30 epochs.

Expected rule: Overtraining (defaults: patience_validation=10 evaluation passes without a new
best validation loss (delta 1 %), patience_train=5 windows of 10 training steps), by step 600 at
the latest (each epoch is 10 training steps then a 5-step evaluation pass).

Measured with plain PyTorch (tests/training/plain_measure.py, 300 training steps, 30 passes):
the mean validation loss per pass is best at pass 8 (0.167, global steps 115-119); no later pass
beats it (0.17 to 0.19, rising slowly), so the 10th pass without a new best is pass 18 (steps
265-269) and the rule can fire at step 270. The training loss meanwhile falls from 1.88 to
0.0003 (last 10 steps).
"""

import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 256)
        self.out = nn.Linear(256, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.out(x)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)

    digits = load_digits()
    x = ((digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)).astype(np.float32)
    order = rng.permutation(len(x))
    tr, va = order[:300], order[300:800]
    train_loader = DataLoader(
        TensorDataset(torch.from_numpy(x[tr]), torch.tensor(digits.target[tr])),
        batch_size=30, shuffle=True)
    val_loader = DataLoader(
        TensorDataset(torch.from_numpy(x[va]), torch.tensor(digits.target[va])), batch_size=100)

    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    step, epoch = 0, 0
    while step < args.steps:
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            step += 1
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        total, n = 0.0, 0
        with torch.no_grad():
            for xb, yb in val_loader:
                total += criterion(model(xb), yb).item() * len(yb)
                n += len(yb)
        epoch += 1
        if epoch % 5 == 0:
            print(f"epoch {epoch} train loss {loss.item():.4f} val loss {total / n:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
