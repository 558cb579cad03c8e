"""Digits classifier whose weights are initialised at std=1e-4 and trained with Adam at 1e-2.

Planted problem: updates far larger than the weights. The author "initialises small for
stability" with nn.init.normal_(std=1e-4); Adam's first steps move every weight by about the
learning rate (1e-2), a hundred times the weights' own size, so the early training is driven by
the optimizer's step size rather than by the weights' scale.

Expected rule: WeightUpdateRatio (defaults: large_threshold=10 on ||w - w_prev|| / ||w_prev||),
by step 5 at the latest (weights saved every 5 steps; steps 0 and 5 are compared).

Measured with plain PyTorch (tests/training/plain_measure.py, 40 steps): the first Adam step
moves l1.weight by 94 times its norm and l2.weight by 97 times (per-step ratio
||w1 - w0|| / ||w0||); later steps 0.8, 0.5, 0.4, ... as the weights grow to normal size
(variance 1e-8 at step 0, 1.8e-2 at the end). The loss falls from 1.95 to 0.22: the run
recovers, but its start is driven by the step size, not by the gradients' scale.
"""

import argparse
import os

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(64, 64)
        self.l2 = nn.Linear(64, 10)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=1e-4)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["weights", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    loader = DataLoader(
        TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(digits.target)),
        batch_size=32, shuffle=True)

    model = MLP()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)

    step = 0
    model.train()
    while step < args.steps:
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            step += 1
            if step >= args.steps:
                break
        print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
