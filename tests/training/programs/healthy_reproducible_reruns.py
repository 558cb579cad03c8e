"""Healthy run: the same digits training run twice with every source of randomness seeded,
written to two trials (OUT/run_a and OUT/run_b) that must be identical.

No planted problem: the counterpart of similar_across_runs_unseeded_augmentation.py. Each run
seeds torch, and the input-noise augmentation draws from a torch.Generator seeded per run, so
both runs see the same initial weights, the same batches and the same noise; on CPU with one
thread PyTorch's kernels are deterministic, so every saved tensor is bitwise equal.

Expected rules: none (in particular SimilarAcrossRuns with other_trials=[run_b] must stay
silent).

Measured with plain PyTorch (tests/training/plain_measure.py, 20 steps per run): identical
losses at every step in both runs; final loss 0.599788 in both.
"""

import argparse
import json
import os

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


def train_once(out_dir, x, y, steps, seed=0):
    torch.manual_seed(seed)
    noise_gen = torch.Generator().manual_seed(seed + 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                        generator=torch.Generator().manual_seed(seed + 2))
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
            xb = xb + 0.1 * torch.randn(xb.shape, generator=noise_gen)  # augmentation
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
