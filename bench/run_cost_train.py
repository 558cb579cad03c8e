#!/usr/bin/env python
"""The trainings that bench/run_cost.py times, plain and under `trainscope run`.

    python bench/run_cost_train.py --model cnn|lstm|mlp [--steps N] [--hook] [--device cuda]

Each trains on seeded synthetic data (no download) with the shape of a training people run:

  cnn   pytorch/examples' MNIST net (conv 32, conv 64, dropout, fc 9216-128-10: 1.2 M
        parameters), batch 64 of 28x28 images, Adadelta
  lstm  a word language model in the style of pytorch/examples' (embedding 2000x200, 2-layer
        LSTM 200, tied decoder), bptt 35, batch 20, SGD with gradient clipping
  mlp   a short step: MLP 64-128-64-10, batch 32, SGD with momentum (about a millisecond a step)

--hook adds the two lines a user writes for smdebug (a hook from the JSON configuration that
`trainscope run` writes, the model and the loss registered); without it the script has no hook,
as an unmodified script under the automatic mode. --device trains on that device (the data is
made on the CPU with the same seed and moved there once). Prints one line: `steps=N seconds=S`.
"""

import argparse
import os
import time

import torch
import torch.nn.functional as F
from torch import nn


class MnistNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(self.dropout1(x), 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return self.fc2(x)


class WordLm(nn.Module):
    def __init__(self, ntoken=2000, nhid=200, nlayers=2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, nhid)
        self.rnn = nn.LSTM(nhid, nhid, nlayers, dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        out, _ = self.rnn(self.drop(self.encoder(x)))
        return self.decoder(self.drop(out))


def batches(model, steps, gen, device):
    """(input, target) pairs: a few distinct batches cycled, so data making costs nothing."""
    if model == "cnn":
        pool = [(torch.randn(64, 1, 28, 28, generator=gen),
                 torch.randint(0, 10, (64,), generator=gen)) for _ in range(8)]
    elif model == "lstm":
        # a token stream with structure (each token mostly follows from the previous one)
        pool = []
        for _ in range(8):
            seq = torch.randint(0, 2000, (36, 20), generator=gen)
            follows = torch.rand(35, 20, generator=gen) < 0.7
            seq[1:] = torch.where(follows, (seq[:-1] * 7 + 3) % 2000, seq[1:])
            pool.append((seq[:-1], seq[1:]))
    else:
        w = torch.randn(64, 10, generator=gen)
        pool = []
        for _ in range(16):
            x = torch.randn(32, 64, generator=gen)
            pool.append((x, (x @ w).argmax(1)))
    pool = [(x.to(device), y.to(device)) for x, y in pool]
    for i in range(steps):
        yield pool[i % len(pool)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["cnn", "lstm", "mlp"], required=True)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--hook", action="store_true", help="the two-line smdebug-style hook")
    ap.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:1, ...")
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    steps = args.steps or {"cnn": 200, "lstm": 200, "mlp": 20000}[args.model]
    if args.model == "cnn":
        model = MnistNet()
        opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
        loss_fn = nn.CrossEntropyLoss()
    elif args.model == "lstm":
        model = WordLm()
        opt = torch.optim.SGD(model.parameters(), lr=5.0)
        loss_fn = nn.CrossEntropyLoss()
    else:
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
    model.to(args.device)

    hook = None
    if args.hook and os.environ.get("TRAINSCOPE_CONFIG"):
        import trainscope.pytorch as ts

        hook = ts.Hook.create_from_json_file()
        hook.register_module(model)
        hook.register_loss(loss_fn)

    t0 = time.perf_counter()
    model.train()
    for x, y in batches(args.model, steps, gen, args.device):
        opt.zero_grad()
        out = model(x)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        if args.model == "lstm":
            nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
    final_loss = loss.item()  # waits for the device's last step
    seconds = time.perf_counter() - t0
    if hook is not None:
        hook.close()
    print(f"steps={steps} seconds={seconds:.3f} loss={final_loss:.4f}", flush=True)


if __name__ == "__main__":
    main()
