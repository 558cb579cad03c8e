"""A real training that writes a trial with a bare hook (no `trainscope run`), for the out_dir
lock tests (test_hook_out_dir_lock.py).

    python lock_writer.py <out_dir|-> <tag> <ready_file> <go_file>

out_dir "-": the hook comes from the JSON configuration (TRAINSCOPE_CONFIG, as `trainscope run`
gives it). Trains a small regression for 5 steps, saving the loss and a tensor "tag" = <tag> at
every step, writes <ready_file> with its pid, waits (at most 120 s) for <go_file>, trains 5 more
steps, closes the hook and prints the hook's stats as JSON on its last line.
"""

import json
import os
import pathlib
import sys
import time

import torch

import trainscope.pytorch as ts

out_dir, tag = sys.argv[1], float(sys.argv[2])
ready, go = pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4])
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Linear(4, 1)
loss_fn = torch.nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
if out_dir == "-":
    hook = ts.Hook.create_from_json_file()
else:
    # Every rank writes its own worker (RANK/WORLD_SIZE), as `trainscope run` configures it.
    hook = ts.Hook(out_dir=out_dir, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["losses"], include_workers="all")
hook.register_module(model)
hook.register_loss(loss_fn)
x, y = torch.randn(32, 4), torch.randn(32, 1)


def train(steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        hook.save_tensor("tag", torch.tensor([tag]), "losses")


train(5)
ready.write_text(json.dumps({"pid": os.getpid()}))
deadline = time.monotonic() + 120
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
train(5)
hook.close()
print(json.dumps(hook.stats()))
