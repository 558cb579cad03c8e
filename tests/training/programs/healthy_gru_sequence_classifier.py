"""Healthy run: a GRU reads sequences of 20 steps of 4 noisy features and classifies each into
3 classes (whether the running sum of the first feature ends low, middle or high), trained with
Adam and gradient-norm clipping at 1.0, validated after every epoch.

No planted problem: standardised inputs, a task the GRU can learn, clipping as people use it for
recurrent networks (it rarely triggers here).

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py, 4 epochs = 188 steps): see
test_programs_plain.py's check: validation accuracy above 0.85, training loss falls by more than
half, no non-finite value.
"""

import argparse
import os

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts


def make_data(n, rng):
    x = rng.normal(size=(n, 20, 4)).astype(np.float32)
    total = x[:, :, 0].sum(axis=1) / np.sqrt(20)  # standard normal
    y = np.digitize(total, [-0.43, 0.43])  # three classes of about equal size
    return x, y.astype(np.int64)


class GruClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 32, batch_first=True)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=2),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x_tr, y_tr = make_data(3000, rng)
    x_va, y_va = make_data(600, rng)
    train_loader = DataLoader(TensorDataset(torch.from_numpy(x_tr), torch.from_numpy(y_tr)),
                              batch_size=64, shuffle=True)

    model = GruClassifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        with torch.no_grad():
            labels = torch.from_numpy(y_va)
            logits = model(torch.from_numpy(x_va))
            val = criterion(logits, labels).item()
            hook.save_tensor("labels", labels)
            hook.save_tensor("predictions", logits)
            acc = (logits.argmax(1).numpy() == y_va).mean()
        print(f"epoch {epoch + 1} train loss {loss.item():.4f} val loss {val:.4f} "
              f"accuracy {acc:.4f}")
    hook.close()


if __name__ == "__main__":
    main()
