"""Planted problem: a ReLU recurrent network (nn.RNN(nonlinearity="relu")) over sequences of 40
steps, its recurrent weights initialised as a scaled identity (the "IRNN" recipe) but at 1.3
instead of 1.0, trained with SGD + momentum at lr=0.05 and no gradient clipping. The hidden state
and the gradients grow geometrically through time: within a few steps the gradients are huge and
the loss and weights go to inf / NaN.

Expected: ExplodingTensor (non-finite values), naming the first tensor that went non-finite.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: a non-finite value appears within the first 10 training steps.
"""

import argparse
import os

import numpy as np
import torch
from torch import nn

import trainscope.pytorch as ts


class IRnn(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.rnn = nn.RNN(2, 64, nonlinearity="relu", batch_first=True)
        with torch.no_grad():
            self.rnn.weight_hh_l0.copy_(scale * torch.eye(64))
            self.rnn.bias_hh_l0.zero_()
        self.head = nn.Linear(64, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1]).squeeze(-1)


def make_batch(rng, n=32, t=40):
    # The "adding problem": add the two values marked in the second channel.
    vals = rng.uniform(size=(n, t)).astype(np.float32)
    marks = np.zeros((n, t), np.float32)
    for i in range(n):
        marks[i, rng.choice(t, 2, replace=False)] = 1.0
    x = np.stack([vals, marks], axis=-1)
    return torch.from_numpy(x), torch.from_numpy((vals * marks).sum(1))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=1),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--scale", type=float, default=1.3)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    model = IRnn(args.scale)
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step in range(args.steps):
        xb, yb = make_batch(rng)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()  # no clip_grad_norm_: the bug
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4g}")
    hook.close()


if __name__ == "__main__":
    main()
