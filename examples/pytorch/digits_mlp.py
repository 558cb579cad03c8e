"""An MLP on the 8x8 digits that scikit-learn ships, captured by trainscope.

    python examples/pytorch/digits_mlp.py --out /tmp/digits            # healthy: ~91% accuracy
    python examples/pytorch/digits_mlp.py --out /tmp/digits --lr 1.0   # planted problem

With the default learning rate (0.05, SGD with momentum 0.9) it reaches about 91% test accuracy
in 8 epochs. With --lr 1.0 the first updates overshoot and push most first-layer units below zero
for every input: measured with plain PyTorch, 32% of them are dead after 10 steps, 91% after 40
and 97% after 80, and the loss stays near ln(10) = 2.3 (chance). Under `trainscope run --rules
default` VanishingGradient reports it (at step 19 the first layer's bias gradient is exactly 0:
its units no longer pass any gradient), LossNotDecreasing as the loss rises, DeadRelu once most
units are dead; the rules run in parallel, and with a stop action whichever reports first has
trainscope stop the training at the next step boundary (exit code 4).

Under `trainscope run` the hook comes from the configuration the supervisor wrote
(TRAINSCOPE_CONFIG: the collections the chosen rules need); run alone, it saves weights,
gradients and losses to --out.
"""

import argparse
import os
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["weights", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/digits-mlp", help="trial folder (when run alone)")
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0  # pixels 0..16 -> 0..1
    y = torch.tensor(digits.target, dtype=torch.long)
    n_train = 1500
    train = DataLoader(TensorDataset(x[:n_train], y[:n_train]), batch_size=32, shuffle=True)
    test_x, test_y = x[n_train:], y[n_train:]

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in train:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        with torch.no_grad():
            logits = model(test_x)
            test_loss = criterion(logits, test_y).item()
            accuracy = (logits.argmax(1) == test_y).float().mean().item()
        print(f"epoch {epoch}: train loss {loss.item():.4f}  test loss {test_loss:.4f}  "
              f"test accuracy {accuracy:.1%}", flush=True)
    hook.close()
    return 0 if np.isfinite(test_loss) else 1


if __name__ == "__main__":
    sys.exit(main())
