"""Shared set-up of the profiler programs: the hook (from `trainscope run`'s configuration, else
a plain one writing to --out) and a small MLP on the digits data set."""

import os

import torch
from sklearn.datasets import load_digits
from torch import nn

import trainscope.pytorch as ts


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=10),
                   include_collections=["losses"])


def digits_tensors():
    digits = load_digits()
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(digits.target)


def mlp(hidden=256):
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))
