"""Digits classifier whose training loop calls optimizer.zero_grad() between backward() and
step().

Planted problem: the loss does not decrease. The loop is

    loss.backward()
    optimizer.zero_grad()   # meant to be before backward()
    optimizer.step()

so every step applies a zero gradient: RMSprop leaves the weights where they are and the loss
just fluctuates around its initial value (about ln 10 = 2.30) with the batches.

Expected rule: LossNotDecreasing (defaults: windows of 10 steps; the loss never dropped 10 %
below the median of its first window, not even within 2 standard errors of its batch noise, and
shows no downward trend: not learning), by step 39 at the latest (windows end at steps 9, 19, 29,
39; the first judgement is at step 39).

Measured with plain PyTorch (tests/training/plain_measure.py, 80 steps): every update ratio
||w - w_prev|| / ||w_prev|| is 0; the mean loss of the windows of 10 steps is 2.321, 2.320,
2.300, 2.330, 2.309, 2.323, 2.302, 2.328: window 4 (2.330) is above all of the 3 windows before
it, so the rule can fire at step 39.
"""

import argparse
import os

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
    parser.add_argument("--steps", type=int, default=80)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    loader = DataLoader(
        TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(digits.target)),
        batch_size=32, shuffle=True)

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)

    step = 0
    model.train()
    while step < args.steps:
        for xb, yb in loader:
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
            step += 1
            if step >= args.steps:
                break
        print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
