"""Digits MLP whose training loop never calls optimizer.zero_grad().

Planted problem: the gradients accumulate in .grad from step to step, so each update is the sum of
all the gradients so far; with SGD + momentum the steps grow until the loss climbs far above its
start (about 2.3) without ever becoming NaN: divergence, not "no learning".

Expected rule: LossNotDecreasing (rising, then diverged), by step 39.

Measured with plain PyTorch: the loss stays finite, its mean over the last 10 steps is more than
10 times the first step's (test_programs_plain.py).
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
    hook = ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights", "biases", "gradients", "losses",
                                        "relu_output"])
    hook.get_collection("relu_output").include("relu_output")
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=80)
    args = parser.parse_args()
    torch.manual_seed(8)
    torch.set_num_threads(1)
    rng = np.random.default_rng(8)
    d = load_digits()
    x = ((d.data - d.data.mean(0)) / (d.data.std(0) + 1e-6)).astype(np.float32)
    y = d.target
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step in range(args.steps):
        idx = rng.choice(len(y), 32, replace=False)
        loss = criterion(model(torch.from_numpy(x[idx])), torch.from_numpy(y[idx]))
        loss.backward()  # no optimizer.zero_grad() anywhere
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
