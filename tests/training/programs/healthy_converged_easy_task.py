"""Healthy run: logistic regression on two well separated Gaussian blobs with Adam, trained for
250 steps: the task is learned within about 40 steps and the loss then converges towards 0
(below 0.01), where it stays with small wobbles.

No planted problem: an easy task learned early and trained on past convergence, as happens when
people run a fixed number of epochs. Convergence is not a bug: at most an informational note.

Expected rules: none.

Measured with plain PyTorch: the mean loss of the last 10 steps is below 0.01 and below 1 % of
the first step's (test_programs_plain.py).
"""

import argparse
import os

import torch
from torch import nn

import trainscope.pytorch as ts


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights", "biases", "gradients", "losses"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=250)
    args = parser.parse_args()
    torch.manual_seed(2)
    torch.set_num_threads(1)
    n = 2000
    y = torch.randint(0, 2, (n,))
    x = torch.randn(n, 2) * 0.7 + (y.float() * 2 - 1).unsqueeze(1) * torch.tensor([3.0, 3.0])
    model = nn.Sequential(nn.Linear(2, 1))
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    g = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        idx = torch.randint(0, n, (64,), generator=g)
        optimizer.zero_grad()
        loss = criterion(model(x[idx]).squeeze(1), y[idx].float())
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.5f}")
    hook.close()


if __name__ == "__main__":
    main()
