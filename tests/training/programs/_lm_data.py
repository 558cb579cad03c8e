"""Synthetic text for the language-model programs: a random Markov chain over a vocabulary of 40
tokens in which every token has 3 likely successors, so a model can learn it (the entropy of the
next token is about 1.2 nats against ln 40 = 3.7 for a uniform guess)."""

import torch


def markov_batches(steps, batch=16, length=20, vocab=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    succ = torch.randint(0, vocab, (vocab, 3), generator=g)
    probs = torch.tensor([0.6, 0.3, 0.1])
    for _ in range(steps):
        seq = torch.empty(batch, length + 1, dtype=torch.long)
        seq[:, 0] = torch.randint(0, vocab, (batch,), generator=g)
        for t in range(length):
            pick = torch.multinomial(probs, batch, replacement=True, generator=g)
            seq[:, t + 1] = succ[seq[:, t], pick]
        yield seq[:, :-1], seq[:, 1:]
