"""Digits MLP (pixels scaled to 0..1, two hidden ReLU layers of 256) trained with Adam at a
learning rate of 0.3, some 300 times Adam's usual 1e-3.

Planted problem: the first updates overshoot, the loss spikes (to tens within the first steps),
and the hidden units' inputs are pushed below zero for (almost) every input: nearly all ReLU
outputs of the first hidden layer are zero from then on.

Expected rule: DeadRelu, by step 10.

Measured with plain PyTorch: the loss passes 3 times its first value within 10 steps, and from
step 10 on more than 90 % of the first hidden layer's ReLU outputs are zero at every step
(test_programs_plain.py).
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
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    torch.manual_seed(9)
    torch.set_num_threads(1)
    rng = np.random.default_rng(9)
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.3)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step in range(args.steps):
        idx = rng.choice(len(y), 32, replace=False)
        optimizer.zero_grad()
        loss = criterion(model(torch.from_numpy(x[idx])), torch.from_numpy(y[idx]))
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
