"""Digits classifier trained on only 40 examples with a large MLP, validated on 400 others.

Planted problem: a training set far too small for the model. A 64-512-512-10 MLP (about 300k
parameters) memorises 40 examples within a few epochs: the training loss falls towards 0 while
the validation loss stays high, so the gap grows quickly.

Expected rule: Overfit (defaults: condition=stall, ratio_threshold=0.1, patience=1: (mean
validation loss - mean training loss) / mean training loss > 0.1 after an evaluation pass, while
the validation loss has stopped improving over the last 3 passes and the training loss still
falls), by step 100 at the latest (each epoch is 5 training steps then a 4-step evaluation pass;
steps are global). SageMaker's ratio alone (condition=ratio) fires at pass 2 (step 18).

Measured with plain PyTorch (tests/training/plain_measure.py, 60 training steps, 12 passes):
(validation - training) / training loss per pass: pass 1 (steps 5-8) val 2.03 vs train 2.14
(-0.05), pass 2 (steps 14-17) 1.76 vs 1.34 (+0.31), pass 3 1.51 vs 0.76 (+0.98), ..., pass 12
0.97 vs 0.0039 (+249). The training loss of the last batches is 0.004. The validation loss falls
until pass 10 (0.966) and stops improving at pass 11 (steps 95-98: 0.969 against 0.971 two passes
before) while the training loss halves.
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
        include_collections=["losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    digits = load_digits()
    x = ((digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)).astype(np.float32)
    order = rng.permutation(len(x))
    train_idx, val_idx = order[:40], order[40:440]
    train = TensorDataset(torch.from_numpy(x[train_idx]), torch.tensor(digits.target[train_idx]))
    val = TensorDataset(torch.from_numpy(x[val_idx]), torch.tensor(digits.target[val_idx]))
    train_loader = DataLoader(train, batch_size=8, shuffle=True)
    val_loader = DataLoader(val, batch_size=100)

    model = nn.Sequential(
        nn.Linear(64, 512), nn.ReLU(),
        nn.Linear(512, 512), nn.ReLU(),
        nn.Linear(512, 10),
    )
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    step = 0
    epoch = 0
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
        print(f"epoch {epoch} train loss {loss.item():.4f} val loss {total / n:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
