"""Healthy run: a small residual CNN (conv stem, two residual blocks of conv-BatchNorm-ReLU with
identity shortcuts, global average pooling) on the normalised 8x8 digit images, SGD with
momentum and weight decay, 120 steps.

No planted problem: BatchNorm after every convolution, He-style default initialisation,
normalised inputs.

Expected rules: none.

Measured with plain PyTorch: validation accuracy >= 0.9, training loss falls by 4x or more, no
ReLU layer with more than 20 % inactive units (test_programs_plain.py).
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

import trainscope.pytorch as ts


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.relu2 = nn.ReLU()

    def forward(self, x):
        h = self.relu1(self.bn1(self.conv1(x)))
        return self.relu2(x + self.bn2(self.conv2(h)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU())
        self.block1 = Block(16)
        self.block2 = Block(16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        h = self.block2(self.block1(self.stem(x)))
        return self.head(h.mean(dim=(2, 3)))


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
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    torch.manual_seed(3)
    torch.set_num_threads(1)
    rng = np.random.default_rng(3)
    d = load_digits()
    x = ((d.images - d.images.mean()) / d.images.std()).astype(np.float32)[:, None]
    y = d.target
    order = rng.permutation(len(y))
    tr, va = order[:1400], order[1400:]
    model = ResNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    model.train()
    for step in range(args.steps):
        idx = rng.choice(tr, 32, replace=False)
        optimizer.zero_grad()
        loss = criterion(model(torch.from_numpy(x[idx])), torch.from_numpy(y[idx]))
        loss.backward()
        optimizer.step()
    hook.set_mode(ts.modes.EVAL)
    model.eval()
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
