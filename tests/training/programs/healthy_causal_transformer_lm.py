"""Healthy run: a decoder-only Transformer language model (token and learned position
embeddings, two pre-LayerNorm `nn.TransformerEncoderLayer`s with GELU under a causal mask, a final
LayerNorm, the output layer tied to the token embedding), AdamW with weight decay, linear warm-up
then linear decay (`LambdaLR`), gradient clipping, on the synthetic Markov text of _lm_data.py;
a held-out evaluation every 100 steps.

No planted problem: the usual GPT-style recipe at a small scale. The attention's key biases get a
zero gradient by construction (softmax ignores a constant added to every score): not a fault.

Expected rules: none.

Measured with plain PyTorch (tests/training/plain_measure.py): see test_programs_plain.py's
check: the training loss falls from about ln 40 = 3.7 to under 1.6, the evaluation loss improves
at every pass.
"""

import argparse
import os
import sys

import torch
from torch import nn

import trainscope.pytorch as ts

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lm_data import markov_batches  # noqa: E402

VOCAB, LENGTH = 40, 20


class TinyGpt(nn.Module):
    def __init__(self, dim=64, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, dim)
        self.pos = nn.Embedding(LENGTH, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=0.1,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB, bias=False)
        self.head.weight = self.tok.weight  # weight tying
        nn.init.normal_(self.tok.weight, std=0.02)  # GPT-2's initialisation
        nn.init.normal_(self.pos.weight, std=0.02)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(LENGTH))

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        h = self.blocks(h, mask=self.mask, is_causal=True)
        return self.head(self.norm(h))


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(
        out_dir=out_dir,
        save_config=ts.SaveConfig(save_interval=5),
        include_collections=["weights", "biases", "gradients", "losses"],
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = TinyGpt()
    criterion = nn.CrossEntropyLoss()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
    warmup = 30
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.1, (args.steps - s) / args.steps)))

    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    batches = list(markov_batches(args.steps + 8, batch=32, seed=0))  # one chain
    held_out = batches[args.steps:]

    for step, (x, y) in enumerate(batches[:args.steps]):
        hook.set_mode(ts.modes.TRAIN)
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(x).reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if (step + 1) % 100 == 0:
            hook.set_mode(ts.modes.EVAL)
            model.eval()
            with torch.no_grad():
                val = sum(criterion(model(a).reshape(-1, VOCAB), b.reshape(-1)).item()
                          for a, b in held_out) / len(held_out)
            print(f"step {step + 1} train loss {loss.item():.3f} eval loss {val:.3f}")
    hook.close()


if __name__ == "__main__":
    main()
