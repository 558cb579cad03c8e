"""LSTM language model (the model of healthy_lstm_lm_clipping.py) trained with plain SGD at an
absurd learning rate (1000) and no clipping.

Planted problem: divergence without NaN. The first updates throw the decoder's weights far out:
the loss jumps from about ln 40 = 3.7 to hundreds within the first steps and stays there, while
the saturated LSTM gates pass almost no gradient.

Expected rule: LossNotDecreasing (the loss diverged: its window median is more than 10 times its
initial level) by the first window (step 9).

Measured with plain PyTorch: the loss stays finite, and its median over steps 10-59 is more than
20 times the first step's (test_programs_plain.py).
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
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    torch.manual_seed(4)
    torch.set_num_threads(1)
    model = LM()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1000.0)
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    for step, (x, y) in enumerate(markov_batches(args.steps, seed=4)):
        optimizer.zero_grad()
        loss = criterion(model(x).reshape(-1, 40), y.reshape(-1))
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    hook.close()


if __name__ == "__main__":
    main()
