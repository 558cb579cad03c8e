#!/usr/bin/env python
"""A text classifier with an embedding (EmbeddingBag + Linear) on a small built-in corpus of
generated reviews (positive or negative), trained under trainscope capture. Seconds on a CPU.

    python examples/pytorch/text_classifier.py --out /tmp/text_clf
"""

import random

import torch
import torch.nn as nn

from common import make_hook, parse_args, summarize, ts

POSITIVE = ["great", "excellent", "wonderful", "loved", "superb", "delightful", "enjoyable",
            "brilliant", "charming", "fantastic"]
NEGATIVE = ["awful", "boring", "terrible", "hated", "dull", "poor", "disappointing", "weak",
            "tedious", "bad"]
NEUTRAL = ["the", "movie", "film", "plot", "acting", "was", "really", "quite", "story", "and",
           "a", "it", "characters", "ending", "music", "very", "this", "overall"]


def corpus(n, seed):
    """n (sentence, label) pairs: neutral filler with two or three words of one sentiment."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        label = rng.randrange(2)
        words = rng.choices(NEUTRAL, k=rng.randint(5, 10))
        words += rng.choices(POSITIVE if label else NEGATIVE, k=rng.randint(2, 3))
        rng.shuffle(words)
        out.append((" ".join(words), label))
    return out


class Classifier(nn.Module):
    def __init__(self, vocab_size, dim=32):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        self.fc = nn.Linear(dim, 2)

    def forward(self, tokens, offsets):
        return self.fc(self.embedding(tokens, offsets))


def encode(batch, vocab):
    tokens, offsets = [], []
    for sentence, _ in batch:
        offsets.append(len(tokens))
        tokens += [vocab[w] for w in sentence.split()]
    return (torch.tensor(tokens), torch.tensor(offsets),
            torch.tensor([label for _, label in batch]))


def main():
    args = parse_args(__doc__, epochs=6)
    torch.manual_seed(0)
    vocab = {w: i for i, w in enumerate(sorted(set(POSITIVE + NEGATIVE + NEUTRAL)))}
    train, test = corpus(800, seed=1), corpus(200, seed=2)

    model, criterion = Classifier(len(vocab)), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=2.0)
    hook = make_hook(args, extra_collections=[("embeddings", "^embedding_output")])
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(ts.modes.TRAIN)
        for i in range(0, len(train), 32):
            tokens, offsets, labels = encode(train[i:i + 32], vocab)
            opt.zero_grad()
            loss = criterion(model(tokens, offsets), labels)
            loss.backward()
            opt.step()
        hook.set_mode(ts.modes.EVAL)
        with torch.no_grad():
            tokens, offsets, labels = encode(test, vocab)
            logits = model(tokens, offsets)
            criterion(logits, labels)
            acc = (logits.argmax(1) == labels).float().mean().item()
        hook.save_scalar("test_accuracy", acc)
        print(f"epoch {epoch}: test accuracy {acc:.3f}")
    hook.close()
    if not args.quiet:
        summarize(args.out)


if __name__ == "__main__":
    main()
