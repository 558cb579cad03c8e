"""Healthy run: a tiny Transformer encoder (2 layers, d_model 32, 4 heads, GELU feed-forward,
pre-LayerNorm) classifying token sequences (length 12, vocabulary 20: does token 5 occur?),
AdamW with a linear warm-up of 30 steps then constant learning rate, 200 steps.

No planted problem. The attention's key projection bias gets no gradient of its own (softmax
ignores a constant added to every score), a fact of the architecture, not a bug.

Expected rules: none.

Measured with plain PyTorch: the training loss falls by 3x or more and the accuracy on fresh
sequences is >= 0.9 (test_programs_plain.py).
"""

import argparse
import os

import torch
from torch import nn

import trainscope.pytorch as ts


class Classifier(nn.Module):
    def __init__(self, vocab=20, d=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(12, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 4, dim_feedforward=64, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        h = self.encoder(self.embed(x) + self.pos)
        return self.head(self.norm(h.mean(1)))


def batch(g, n=32):
    x = torch.randint(0, 20, (n, 12), generator=g)
    # half of the sequences without token 5, so both classes are common
    x[: n // 2][x[: n // 2] == 5] = 6
    return x, (x == 5).any(1).long()


def make_hook(out_dir):
    if os.environ.get("TRAINSCOPE_CONFIG"):
        return ts.Hook.create_from_json_file()
    return ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights", "biases", "gradients", "losses"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    torch.manual_seed(11)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(11)
    model = Classifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 30))
    hook = make_hook(args.out)
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(ts.modes.TRAIN)
    model.train()
    for step in range(args.steps):
        x, y = batch(g)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        warmup.step()
    hook.set_mode(ts.modes.EVAL)
    model.eval()
    with torch.no_grad():
        x, y = batch(g, 500)
        logits = model(x)
        hook.save_tensor("labels", y)
        hook.save_tensor("predictions", logits)
    print(f"final loss {loss.item():.4f} accuracy {(logits.argmax(1) == y).float().mean():.3f}")
    hook.close()


if __name__ == "__main__":
    main()
