"""Sentiment-style text classifier on a synthetic corpus, every sequence padded to 128 tokens.

Planted problem: padding dominates the input sequences. The reviews are 6 to 20 tokens long,
but the collate function pads every batch to the model's maximum length of 128 with token id 0,
so about 90 % of every input is padding: the embedding and the pooling spend nearly all their
work on padding, and mean pooling over the padded sequence dilutes the signal.

Expected rule: NLPSequenceRatio (defaults: token_values=0, token_thresholds_percent=50, the
input of the embedding module, "embedding_input_0"), at step 0 (one batch of 32 x 128 tokens is
already far above the rule's minimum of 100 tokens).

Measured with plain PyTorch (tests/training/plain_measure.py, 40 steps): token 0 is 90.0 % of
the input ids on average (90.6 % at step 0); the loss barely moves (0.698 -> 0.673 over the
first and last 10 steps).
"""

import argparse
import os

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import trainscope.pytorch as ts

VOCAB = 500
MAX_LEN = 128
PAD = 0


class Reviews(Dataset):
    """Token ids 1..VOCAB-1; positive reviews use more ids from 1..50, negative from 51..100."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.items = []
        for _ in range(n):
            label = int(rng.integers(0, 2))
            length = int(rng.integers(6, 21))
            common = rng.integers(101, VOCAB, size=length)
            cue = rng.integers(1, 51, size=length) if label else rng.integers(51, 101, size=length)
            tokens = np.where(rng.random(length) < 0.3, cue, common)
            self.items.append((torch.tensor(tokens, dtype=torch.long), label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def pad_to_max(batch):
    ids = torch.full((len(batch), MAX_LEN), PAD, dtype=torch.long)
    for i, (tokens, _) in enumerate(batch):
        ids[i, : len(tokens)] = tokens
    return ids, torch.tensor([label for _, label in batch])


class TextClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 32, padding_idx=PAD)
        self.proj = nn.Linear(32, 32)
        self.out = nn.Linear(32, 2)

    def forward(self, ids):
        h = self.embedding(ids).mean(dim=1)
        return self.out(torch.tanh(self.proj(h)))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    hook = ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=2),
        include_collections=["input_sequence", "losses"],
    )
    hook.get_collection("input_sequence").include("embedding_input_0")
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)

    loader = DataLoader(Reviews(1000, seed=0), batch_size=32, shuffle=True, collate_fn=pad_to_max)
    model = TextClassifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)

    step = 0
    model.train()
    while step < args.steps:
        for ids, labels in loader:
            optimizer.zero_grad()
            loss = criterion(model(ids), labels)
            loss.backward()
            optimizer.step()
            step += 1
            if step >= args.steps:
                break
        print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
