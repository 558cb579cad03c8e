#!/usr/bin/env python
"""An MLP on scikit-learn's digits (8x8 images, 10 classes; shipped with scikit-learn, no
download), trained under trainscope capture. Seconds on a CPU.

    python examples/pytorch/mlp_digits.py --out /tmp/digits_mlp
    trainscope ls /tmp/digits_mlp        # or open it with trainscope.create_trial
"""

import torch
import torch.nn as nn
from sklearn.datasets import load_digits

from common import make_hook, parse_args, summarize, ts


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(128, 64)
        self.relu2 = nn.ReLU()
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        return self.out(self.relu2(self.fc2(self.relu1(self.fc1(x)))))


def main():
    args = parse_args(__doc__)
    torch.manual_seed(0)
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    train, test = perm[:1400], perm[1400:]

    model, criterion = Mlp(), nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    hook = make_hook(args, extra_collections=[("relu_activations", "relu[12]_output")])
    hook.register_module(model)  # each forward of `model` is one step
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        for i in range(0, len(train), 64):
            idx = train[i:i + 64]
            opt.zero_grad()
            loss = criterion(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
        hook.set_mode(ts.modes.EVAL)
        model.eval()
        with torch.no_grad():
            logits = model(x[test])
            criterion(logits, y[test])
            acc = (logits.argmax(1) == y[test]).float().mean().item()
        hook.save_scalar("test_accuracy", acc)
        print(f"epoch {epoch}: test accuracy {acc:.3f}")
    hook.close()
    if not args.quiet:
        summarize(args.out)


if __name__ == "__main__":
    main()
