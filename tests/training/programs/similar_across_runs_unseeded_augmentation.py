"""Reproducibility check that fails: the same digits training run twice "with the same seed",
written to two trials (OUT/run_a and OUT/run_b), differs from the first step.

Planted problem: an unseeded source of randomness. Each run calls torch.manual_seed(0), so the
initial weights and the DataLoader's shuffling are identical, but the input-noise augmentation
draws from NumPy's global generator, which the script never re-seeds between runs (it is seeded
once at start-up, so the program as a whole is still deterministic). The two runs see different
noise, so their gradients differ at step 0 and their weights from step 1 on.

Expected rule: SimilarAcrossRuns on trial run_a with other_trials=[run_b] (defaults rtol=1e-5,
atol=1e-8, every saved tensor), by step 1 at the latest (weights, gradients and losses saved
every step). Both trials are written by this program with hooks it constructs itself (one hook
per run, as a user comparing two runs would do); TRAINSCOPE_CONFIG, when set, supplies the
configuration of both hooks, with their out_dir replaced by OUT/run_a and OUT/run_b.

Measured with plain PyTorch (tests/training/plain_measure.py, 20 steps per run): the losses of
the two runs differ from step 0 (2.29668 vs 2.29468), as do the gradients (mean |g| of
Sequential_0.weight 5.962e-3 vs 6.044e-3 at step 0); final losses 0.90928 vs 0.91488.
"""

import argparse
import json
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


def make_hook(out_dir):
    config = os.environ.get("TRAINSCOPE_CONFIG")
    if config:
        with open(config) as f:
            cfg = json.load(f)
        cfg["LocalPath"] = out_dir
        path = os.path.join(os.path.dirname(out_dir), os.path.basename(out_dir) + "_hook.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return ts.Hook.create_from_json_file(path)
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["weights", "gradients", "losses"],
    )


def train_once(out_dir, x, y, steps):
    torch.manual_seed(0)  # "same seed, same run"
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    hook = make_hook(out_dir)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)

    step = 0
    model.train()
    while step < steps:
        for xb, yb in loader:
            noise = np.random.normal(0.0, 0.1, size=tuple(xb.shape)).astype(np.float32)
            xb = xb + torch.from_numpy(noise)  # augmentation
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            step += 1
            if step >= steps:
                break
    hook.close()
    return loss.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    np.random.seed(0)
    torch.set_num_threads(1)
    digits = load_digits()
    x = (digits.data - digits.data.mean(0)) / (digits.data.std(0) + 1e-6)
    x = torch.tensor(x, dtype=torch.float32)
    y = torch.tensor(digits.target)

    os.makedirs(args.out, exist_ok=True)
    a = train_once(os.path.join(args.out, "run_a"), x, y, args.steps)
    b = train_once(os.path.join(args.out, "run_b"), x, y, args.steps)
    print(f"final loss run_a {a:.6f} run_b {b:.6f}")


if __name__ == "__main__":
    main()
