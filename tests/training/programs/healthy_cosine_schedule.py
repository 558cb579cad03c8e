"""Healthy run: an MLP on digits with SGD + momentum and a cosine learning-rate schedule that
anneals to 0 over the 200 steps (CosineAnnealingLR), so the loss flattens at the end because the
learning rate does.

No planted problem.

Expected rules: none.

Measured with plain PyTorch: the training loss falls by 5x or more and the validation accuracy
ends >= 0.9 (test_programs_plain.py).
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
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    torch.manual_seed(7)
    torch.set_num_threads(1)
    rng = np.random.default_rng(7)
    d = load_digits()
    x = ((d.data - d.data.mean(0)) / (d.data.std(0) + 1e-6)).astype(np.float32)
    y = d.target
    order = rng.permutation(len(y))
    tr, va = order[:1400], order[1400:]
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step in range(args.steps):
        idx = rng.choice(tr, 32, replace=False)
        optimizer.zero_grad()
        loss = criterion(model(torch.from_numpy(x[idx])), torch.from_numpy(y[idx]))
        loss.backward()
        optimizer.step()
        schedule.step()
    hook.set_mode(ts.modes.EVAL)
    with torch.no_grad():
        logits = model(torch.from_numpy(x[va]))
        val = criterion(logits, torch.from_numpy(y[va]))
        hook.save_tensor("labels", torch.from_numpy(y[va]))
        hook.save_tensor("predictions", logits)
    acc = (logits.argmax(1).numpy() == y[va]).mean()
    print(f"validation loss {val.item():.4f} accuracy {acc:.3f}")
    hook.close()


if __name__ == "__main__":
    main()
