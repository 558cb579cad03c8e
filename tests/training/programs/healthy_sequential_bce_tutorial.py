"""Healthy run: the model of SageMaker Debugger's own PyTorch tutorial shape, an `nn.Sequential`
with numbered layers ending in `nn.Sigmoid` and trained with `nn.BCELoss`, here on scikit-learn's
breast-cancer table (30 standardised features, 2 classes), SGD with momentum and weight decay,
10 epochs.

No planted problem: standardised inputs, a binary task the model learns, a held-out validation
set evaluated every 2 epochs. The final Sigmoid is saturated once the model is confident: that is
what a trained binary classifier looks like, not a fault.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: validation accuracy at least 0.95, training loss falls to under a quarter.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_breast_cancer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=2),
        include_collections=["weights", "biases", "gradients", "losses", "relu_output"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    data = load_breast_cancer()
    order = rng.permutation(len(data.target))
    tr, va = order[:450], order[450:]
    x = data.data.astype(np.float32)
    x = (x - x[tr].mean(0)) / x[tr].std(0)
    y = data.target.astype(np.float32)[:, None]
    train_loader = DataLoader(TensorDataset(torch.from_numpy(x[tr]), torch.from_numpy(y[tr])),
                              batch_size=32, shuffle=True)

    model = nn.Sequential(
        nn.Linear(30, 64),
        nn.ReLU(),
        nn.Linear(64, 32),
        nn.ReLU(),
        nn.Linear(32, 1),
        nn.Sigmoid(),
    )
    criterion = nn.BCELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    x_va, y_va = torch.from_numpy(x[va]), torch.from_numpy(y[va])
    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        if (epoch + 1) % 2 == 0:
            hook.set_mode(ts.modes.EVAL)
            model.eval()
            with torch.no_grad():
                prob = model(x_va)
                val = criterion(prob, y_va).item()
                acc = ((prob > 0.5).float() == y_va).float().mean().item()
            print(f"epoch {epoch + 1} train loss {loss.item():.4f} val loss {val:.4f} "
                  f"accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
