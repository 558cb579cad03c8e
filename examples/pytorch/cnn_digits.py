#!/usr/bin/env python
"""A small CNN on scikit-learn's digits (8x8 images, no download), trained under trainscope
capture, with the convolutions' outputs in a collection of their own. Seconds on a CPU.

    python examples/pytorch/cnn_digits.py --out /tmp/digits_cnn
"""

import torch
import torch.nn as nn
from sklearn.datasets import load_digits

from common import make_hook, parse_args, summarize, ts


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.relu1(self.conv1(x))
        x = self.pool(self.relu2(self.conv2(x)))
        return self.fc(self.flatten(x))


def main():
    args = parse_args(__doc__, epochs=4)
    torch.manual_seed(0)
    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    train, test = perm[:1400], perm[1400:]

    model, criterion = Cnn(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    hook = make_hook(args, extra_collections=[("conv_outputs", "^conv[12]_output")])
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        for i in range(0, len(train), 32):
            idx = train[i:i + 32]
            opt.zero_grad()
            loss = criterion(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
        hook.set_mode(ts.modes.EVAL)
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
