"""Healthy run: an MLP on sklearn's digits trained with small batches (8 examples) and plain SGD
for 300 steps: the per-batch loss is very noisy while its trend falls steadily.

No planted problem: standardised inputs, default initialisation, a modest learning rate. Batches of
8 make the loss of one batch swing by a factor of several around the trend, so the mean of one
window of 10 steps is often above one of the windows before it although the model keeps
improving (the false alarm of a window-mean comparison).

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see check_ in
tests/training/test_programs_plain.py (the loss of the last 50 steps is below a quarter of the
first 10 steps', validation accuracy >= 0.9).
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
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    torch.manual_seed(1)
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    d = load_digits()
    x = ((d.data - d.data.mean(0)) / (d.data.std(0) + 1e-6)).astype(np.float32)
    y = d.target
    order = rng.permutation(len(y))
    tr, va = order[:1400], order[1400:]
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step in range(args.steps):
        idx = rng.choice(tr, 8, replace=False)
        optimizer.zero_grad()
        loss = criterion(model(torch.from_numpy(x[idx])), torch.from_numpy(y[idx]))
        loss.backward()
        optimizer.step()
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
