"""Healthy run: fine-tuning with a frozen backbone. A backbone MLP (64 -> 128 -> 64, ReLU) is
first trained on digits 0-4 (without trainscope, as a pretrained model would be loaded); then it
is frozen (requires_grad_(False)), a new head for the ten digits is attached, and only the head is
given to the optimizer (Adam), 150 steps under trainscope.

No planted problem: a frozen backbone is frozen on purpose; its weights do not move and get no
gradient.

Expected rules: none.

Measured with plain PyTorch: the backbone's weights never change, the head's do, and the
training loss falls by 2x or more (test_programs_plain.py).
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
    parser.add_argument("--steps", type=int, default=150)
    args = parser.parse_args()
    torch.manual_seed(6)
    torch.set_num_threads(1)
    rng = np.random.default_rng(6)
    d = load_digits()
    x = torch.from_numpy(((d.data - d.data.mean(0)) / (d.data.std(0) + 1e-6)).astype(np.float32))
    y = torch.from_numpy(d.target)
    backbone = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU())
    # "Pretraining" on digits 0-4.
    pre_head = nn.Linear(64, 5)
    pre_opt = torch.optim.Adam(list(backbone.parameters()) + list(pre_head.parameters()), 1e-3)
    low = np.where(d.target < 5)[0]
    for _ in range(150):
        idx = torch.from_numpy(rng.choice(low, 32))
        pre_opt.zero_grad()
        nn.functional.cross_entropy(pre_head(backbone(x[idx])), y[idx]).backward()
        pre_opt.step()
    backbone.requires_grad_(False)
    model = nn.Sequential(backbone, nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model[1].parameters(), lr=3e-3)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step in range(args.steps):
        idx = torch.from_numpy(rng.choice(len(y), 32))
        optimizer.zero_grad()
        loss = criterion(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
