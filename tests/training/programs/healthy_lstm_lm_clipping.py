"""Healthy run: an LSTM language model (embedding 32, one LSTM layer of 64, linear decoder) on
synthetic Markov-chain text (programs/_lm_data.py, vocabulary 40), Adam with gradient clipping
(max norm 0.5), 150 steps, as word-level language models are trained.

No planted problem. The embedding's gradient is zero for every token not in the batch (by
design), so its gradient is sparse.

Expected rules: none.

Measured with plain PyTorch: the training loss falls from about ln 40 = 3.7 to below 2.0
(test_programs_plain.py).
"""

import argparse
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainscope.pytorch as ts  # noqa: E402
from _lm_data import markov_batches  # noqa: E402


class LM(nn.Module):
    def __init__(self, vocab=40):
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        self.lstm = nn.LSTM(32, 64, batch_first=True)
        self.decoder = nn.Linear(64, vocab)

    def forward(self, x):
        h, _ = self.lstm(self.embed(x))
        return self.decoder(h)


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights", "biases", "gradients", "losses"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--lr", type=float, default=5e-3)
    args = parser.parse_args()
    torch.manual_seed(4)
    torch.set_num_threads(1)
    model = LM()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step, (x, y) in enumerate(markov_batches(args.steps, seed=4)):
        optimizer.zero_grad()
        loss = criterion(model(x).reshape(-1, 40), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    print(f"final loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
