"""One worker of a 2-process training (launched by test_hook_workers.py with RANK, WORLD_SIZE,
MASTER_ADDR=127.0.0.1 and MASTER_PORT set).

    python train_distributed.py <out_dir> <include_workers> <dist|env>

dist: torch.distributed (gloo over loopback) + DistributedDataParallel; the hook takes the worker
from torch.distributed. env: no process group; the hook takes it from RANK/WORLD_SIZE.
After training, worker 0 closes its hook first; worker 1 then checks that the end marker is not
there yet (smdebug wrote it at worker 0's close) and prints MARKER_EARLY=<bool> before closing.
"""

import os
import sys

import torch
import torch.nn as nn

import trainscope.pytorch as ts

out_dir, include_workers, how = sys.argv[1], sys.argv[2], sys.argv[3]
rank = int(os.environ["RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)

model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))
if how == "dist":
    import torch.distributed as dist

    dist.init_process_group("gloo")
    wrapped = nn.parallel.DistributedDataParallel(model)
else:
    wrapped = model

hook = ts.Hook(out_dir=out_dir, include_workers=include_workers,
               save_config=ts.SaveConfig(save_interval=1),
               include_collections=["weights", "gradients", "losses"])
hook.register_module(wrapped)
criterion = nn.MSELoss()
hook.register_loss(criterion)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(10 + rank)  # each worker its own data
for _ in range(3):
    opt.zero_grad()
    loss = criterion(wrapped(torch.randn(5, 4, generator=g)), torch.zeros(5, 1))
    loss.backward()
    opt.step()

marker = os.path.join(out_dir, "training_job_end.ts")
if how == "dist":
    if rank == 0:
        hook.close()
    dist.barrier()
    if rank == 1:
        print(f"MARKER_EARLY={os.path.exists(marker)}", flush=True)
        hook.close()
    dist.barrier()
    dist.destroy_process_group()
else:
    hook.close()
print(f"WORKER={hook.worker}", flush=True)
