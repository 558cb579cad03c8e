"""A word-level LSTM language model trained the way pytorch/examples' word_language_model does
by default, with no trainscope in it and no torch.optim: model.zero_grad(), backward(),
clip_grad_norm_, then every parameter updated by hand (p.data.add_(p.grad, alpha=-lr)); an
NLLLoss module on log_softmax outputs; truncated backpropagation through time over a synthetic
token stream whose next token follows from the current one; an evaluation pass (model.eval(),
no_grad) every 10 steps. Arguments: --steps (training steps), --lr."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--lr", type=float, default=5.0)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)
VOCAB, BPTT, BATCH = 50, 16, 8


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(VOCAB, 32)
        self.rnn = nn.LSTM(32, 64)
        self.decoder = nn.Linear(64, VOCAB)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return F.log_softmax(self.decoder(out), dim=-1), hidden


def stream(n, seed):
    g = torch.Generator().manual_seed(seed)
    tokens = [0]
    follow = torch.randint(0, VOCAB, (VOCAB,), generator=torch.Generator().manual_seed(99))
    noise = torch.rand(n, generator=g) < 0.2
    random = torch.randint(0, VOCAB, (n,), generator=g)
    for i in range(n - 1):
        tokens.append(int(random[i]) if noise[i] else int(follow[tokens[-1]]))
    data = torch.tensor(tokens)
    return data[: len(data) // BATCH * BATCH].view(BATCH, -1).t().contiguous()


def detach(hidden):
    return tuple(h.detach() for h in hidden)


model = RNNModel()
criterion = nn.NLLLoss()
train, valid = stream(BATCH * BPTT * (args.steps + 1) + 1, 1), stream(BATCH * BPTT * 4 + 1, 2)


def evaluate():
    model.eval()
    total, hidden = 0.0, None
    with torch.no_grad():
        for i in range(0, valid.size(0) - 1, BPTT):
            n = min(BPTT, valid.size(0) - 1 - i)
            x, y = valid[i:i + n], valid[i + 1:i + 1 + n]
            out, hidden = model(x, hidden)
            total += criterion(out.view(-1, VOCAB), y.reshape(-1)).item()
    model.train()
    return total / 4


hidden = None
for step in range(args.steps):
    i = step * BPTT
    x, y = train[i:i + BPTT], train[i + 1:i + 1 + BPTT]
    hidden = detach(hidden) if hidden is not None else None
    model.zero_grad()
    out, hidden = model(x, hidden)
    loss = criterion(out.view(-1, VOCAB), y.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-args.lr)
    if step % 10 == 9:
        print(f"step {step + 1} loss {loss.item():.3f} valid {evaluate():.3f}", flush=True)
print("done", flush=True)
