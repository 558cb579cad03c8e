"""A small CPU training with trainscope's profiler on; prints what the hook captured as JSON.

    python train_profiled.py <out_dir> '<options JSON>'

Options: steps (train steps, default 6), eval_steps (default 2), sleep_ms (the data loader's
collate sleeps this long per batch, default 40), detailed ([start_step, num_steps] of the
torch.profiler window), python ([start_step, num_steps] of the Python profiling window),
python_profiler (which profiler that window runs: "cprofile", the default, or "pyinstrument"),
system (start_system_monitor value), interval_ms (system sampling interval), via_env (pass the
configuration as TRAINSCOPE_PROFILER_CONFIG instead of the constructor), workers (DataLoader
num_workers, default 0), phase_min_interval_ms (PhaseMinIntervalInMilliseconds), width (the
hidden layer's, default 32), include (the hook's include_collections; default: its own).
The last stdout line: {"spans": [[phase, name, start_us, dur_us, step], ...], "detailed": [...],
"python_stats": [...], "data_python_stats": [...] (what get_profiler_data() listed before the
hook closed), "system_count": n, "node_id": ..., "base_dir": ...}.
"""

import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

import trainscope.pytorch as ts
from trainscope.profiler import FrameworkProfile, ProfilerConfig, PythonProfilingConfig
from trainscope.profiler import DetailedProfilingConfig

out_dir = sys.argv[1]
opts = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
steps = int(opts.get("steps", 6))
eval_steps = int(opts.get("eval_steps", 2))
sleep_s = float(opts.get("sleep_ms", 40)) / 1000.0

detailed = opts.get("detailed")
python = opts.get("python")
profile = FrameworkProfile(
    detailed_profiling_config=DetailedProfilingConfig(*detailed) if detailed else None,
    python_profiling_config=PythonProfilingConfig(
        *python, python_profiler=opts.get("python_profiler", "cprofile")) if python else None)
config = ProfilerConfig(system_monitor_interval_millis=opts.get("interval_ms", 100),
                        framework_profile_params=profile,
                        start_system_monitor=opts.get("system", False),
                        phase_min_interval_ms=opts.get("phase_min_interval_ms"))

if opts.get("via_env"):
    path = os.path.join(out_dir + "-config.json")
    with open(path, "w") as f:
        f.write(config.to_json())
    os.environ["TRAINSCOPE_PROFILER_CONFIG"] = path
    hook = ts.Hook(out_dir=out_dir, include_collections=opts.get("include"))
else:
    hook = ts.Hook(out_dir=out_dir, profiler_config=config,
                   include_collections=opts.get("include"))


def slow_collate(batch):
    time.sleep(sleep_s)  # the data loader is the bottleneck
    xs, ys = zip(*batch)
    return torch.stack(xs), torch.stack(ys)


torch.manual_seed(0)
torch.set_num_threads(1)  # a tiny model; intra-op threads only add waits on a shared machine
n = 8 * (steps + eval_steps + 1)
data = TensorDataset(torch.randn(n, 16), torch.randint(0, 4, (n,)))
width = int(opts.get("width", 32))
model = torch.nn.Sequential(torch.nn.Linear(16, width), torch.nn.ReLU(), torch.nn.Linear(width, 4))
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
hook.register_module(model)
hook.register_loss(loss_fn)

hook.set_mode(ts.modes.TRAIN)
loader = DataLoader(data, batch_size=8, collate_fn=slow_collate,
                    num_workers=int(opts.get("workers", 0)))
done = 0
for x, y in loader:
    out = model(x)
    with hook.profile("loss", kind="cross-entropy"):
        loss = loss_fn(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    done += 1
    if done == steps:
        break

hook.set_mode(ts.modes.EVAL)
with torch.no_grad():
    for i, (x, y) in enumerate(DataLoader(data, batch_size=8, collate_fn=slow_collate)):
        if i == eval_steps:
            break
        loss_fn(model(x), y)

data_before_close = hook.get_profiler_data()
hook.close()
print(json.dumps({
    "spans": [list(s) for s in data_before_close.spans],
    "summary": data_before_close.summary(),
    "detailed": hook._prof.detailed_traces,
    "python_stats": hook._prof.python_stats,
    "data_python_stats": data_before_close.python_stats,
    "system_count": len(data_before_close.system),
    "node_id": data_before_close.node_id,
    "base_dir": data_before_close.base_dir,
}))
