"""An MLP on the 8x8 digits that scikit-learn ships: a plain PyTorch training with no trainscope
in it, which the README's main job debugs without a line edited.

    python examples/pytorch/digits_mlp.py                # healthy: ~91% test accuracy
    trainscope run --rules default --action stop -- python examples/pytorch/digits_mlp.py --lr 1.0

With the default learning rate (0.05, SGD with momentum 0.9) it reaches about 91% test accuracy
in 8 epochs. With --lr 1.0 (the planted problem) the first updates overshoot and push most
first-layer units below zero for every input: measured with plain PyTorch, 32% of them are dead
after 10 steps, 91% after 40 and 97% after 80, and the loss stays near ln(10) = 2.3 (chance).

Under `trainscope run` the automatic mode finds the model (the module whose parameters the
optimizer steps), its loss (the tensor backward() is called on, the CrossEntropyLoss's output)
and its steps (each optimizer step; model.eval() and no_grad() mark evaluation), and captures
what the chosen rules need. The default rules report the dead units (DeadRelu), the gradients
that vanish behind them (VanishingGradient) and the loss that stops learning; the rules run in
parallel, and with a stop action whichever reports first has trainscope stop the training at
the next step boundary (exit code 4). `python -m trainscope.auto` runs it the same way without
the supervisor.
"""

import argparse
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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

    for epoch in range(args.epochs):
        model.train()
        for xb, yb in train:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            logits = model(test_x)
            test_loss = criterion(logits, test_y).item()
            accuracy = (logits.argmax(1) == test_y).float().mean().item()
        print(f"epoch {epoch}: train loss {loss.item():.4f}  test loss {test_loss:.4f}  "
              f"test accuracy {accuracy:.1%}", flush=True)
    return 0 if np.isfinite(test_loss) else 1


if __name__ == "__main__":
    sys.exit(main())
