"""Mixed precision with a GradScaler, with no trainscope in it: at one iteration (--bad-step)
the loss is made huge (finite): its scaled gradients overflow and the scaler skips that
optimizer step, as it does for fp16 overflows. The training goes on."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--bad-step", type=int, default=7)
args = parser.parse_args()

torch.manual_seed(6)
torch.set_num_threads(1)
teacher = torch.randn(16, 4)
x_all = torch.randn(2048, 16)
y_all = (x_all @ teacher).argmax(1)

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
scaler = torch.amp.GradScaler("cpu")
skipped = 0

for step in range(args.steps):
    idx = torch.randint(0, len(x_all), (64,))
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = criterion(model(x_all[idx]), y_all[idx])
    if step == args.bad_step:
        loss = loss * 1e38  # finite; scaled by the GradScaler it overflows
    before = scaler.get_scale()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    skipped += scaler.get_scale() < before
print(f"skipped {skipped}", flush=True)
