"""FullyShardedDataParallel on the CPU over gloo, with no trainscope in it: start with
`torchrun --nproc_per_node 2 fsdp_gloo.py`. The parameters are flattened and sharded across the
ranks (use_orig_params=True: the optimizer steps each rank's shard of every original parameter);
each rank trains on its own shard of a synthetic task; SGD, nn.CrossEntropyLoss."""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(5)
torch.set_num_threads(1)
teacher = torch.randn(16, 4)
gen = torch.Generator().manual_seed(100 + rank)
x_all = torch.randn(1024, 16, generator=gen)
y_all = (x_all @ teacher).argmax(1)

model = FSDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh(),
                           nn.Linear(16, 4)), use_orig_params=True, device_id=torch.device("cpu"))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

for step in range(args.steps):
    idx = torch.randint(0, len(x_all), (64,), generator=gen)
    optimizer.zero_grad()
    loss = criterion(model(x_all[idx]), y_all[idx])
    loss.backward()
    optimizer.step()
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} of {os.environ.get('WORLD_SIZE')} done", flush=True)
