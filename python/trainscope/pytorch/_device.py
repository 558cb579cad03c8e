"""Tensors on an accelerator: reductions on the device, one transfer per step.

For a tensor on a GPU the hook never copies the whole tensor to compute a statistic. It computes
only the statistics the plan needs (the TensorStats fields its reductions read: the plan's
"fields", from the core's FieldsRead; names as in _core.STATS_FIELDS) on the device, queues
them, and at the end of the step moves every queued statistic to the host in ONE transfer
(torch.stack(...).cpu()). A raw value to be saved is copied with non_blocking=True into pinned
host memory (PyTorch's caching host allocator reuses it) and a CUDA event is recorded; at the end
of the step the event has long completed, and the buffer goes to the writer without a copy.

The same code runs on CPU tensors (tests use it to check the statistics against the C++ core's).
"""

import torch

from .._native import load as _load_core

_fields_cache = {}  # tuple of (op, abs) -> the fields they read


def needed_fields(reductions):
    """The TensorStats fields a list of (op, abs) reductions reads: the core's one table
    (FieldsRead in trainscope/reductions.h, _core.stats_fields_for), cached per list."""
    key = tuple(tuple(r) for r in reductions)
    fields = _fields_cache.get(key)
    if fields is None:
        fields = _fields_cache[key] = _load_core().stats_fields_for(key)
    return fields


def _stat(f, a, field, n):
    """One statistic as a 0-d float64 tensor on f's device (no host sync)."""
    f64 = torch.float64
    if field == "min":
        return torch.amin(f).to(f64)
    if field == "max":
        return torch.amax(f).to(f64)
    if field == "abs_min":
        return torch.amin(a).to(f64)
    if field == "abs_max":
        return torch.amax(a).to(f64)
    if field == "sum":
        return torch.sum(f, dtype=f64)
    if field == "abs_sum":
        return torch.sum(a, dtype=f64)
    if field == "mean":
        return torch.sum(f, dtype=f64) / n
    if field == "abs_mean":
        return torch.sum(a, dtype=f64) / n
    if field == "sum_sq":
        return torch.linalg.vector_norm(f, dtype=f64) ** 2
    if field == "m2":
        return torch.var(f, correction=0).to(f64) * n
    if field == "abs_m2":
        return torch.var(a, correction=0).to(f64) * n
    if field == "prod":
        return torch.prod(f, dtype=f64)
    if field == "abs_prod":
        return torch.prod(a, dtype=f64)
    if field == "nan_count":
        return torch.isnan(f).sum().to(f64)
    if field == "inf_count":
        return torch.isinf(f).sum().to(f64)
    if field == "zero_count":
        return (f == 0).sum().to(f64)
    raise ValueError(f"unknown statistic {field}")


def device_stats(t, fields):
    """[0-d float64 tensors] for `fields` of tensor `t` (computed where t lives, not synced)."""
    f = t.detach().reshape(-1)
    if f.is_complex():
        f = f.abs()
    elif f.dtype == torch.bool:
        f = f.to(torch.uint8)
    if not f.is_floating_point():
        f = f.to(torch.float64)
    n = f.numel()
    needs_abs = any(x.startswith("abs_") for x in fields)
    a = f.abs() if needs_abs else None
    return [_stat(f, a, x, n) for x in fields]


class DeviceStepBuffer:
    """What one step queued for its end: statistics on the device, raw values in pinned memory."""

    def __init__(self, stats_fields):
        self._all_fields = list(stats_fields)  # _core.STATS_FIELDS
        self._index = {f: i for i, f in enumerate(self._all_fields)}
        self.stats = []  # (name, shape, numel, fields, [0-d tensors])
        self.raws = []  # (name, pinned tensor, event)

    def __bool__(self):
        return bool(self.stats or self.raws)

    def add(self, name, t, plan):
        """Queues what `plan` (a dict from _core.Hook.plan) asks for `t`."""
        if plan["reductions"] or plan["save_shape"]:
            fields = plan["fields"]  # FieldsRead(plan["reductions"]), from the core
            self.stats.append((name, list(t.shape), t.numel(), fields, device_stats(t, fields)))
        if plan["save_raw"]:
            src = t.detach()
            if t.device.type == "cuda":
                buf = torch.empty(src.shape, dtype=src.dtype, pin_memory=True)
                buf.copy_(src, non_blocking=True)
                event = torch.cuda.Event()
                event.record()
            else:
                buf, event = src.clone(), None
            self.raws.append((name, buf, event))

    def flush(self, core_hook):
        """Moves every queued statistic to the host in one transfer and hands everything to the
        C++ hook (which must still be in the step the values belong to)."""
        if self.stats:
            flat = [x for entry in self.stats for x in entry[4]]
            host = torch.stack(flat).cpu().tolist() if flat else []  # the one transfer
            pos = 0
            for name, shape, numel, fields, _ in self.stats:
                values = [0.0] * len(self._all_fields)
                values[self._index["count"]] = float(numel)
                values[self._index["prod"]] = 1.0
                values[self._index["abs_prod"]] = 1.0
                for f in fields:
                    values[self._index[f]] = host[pos]
                    pos += 1
                core_hook.save_stats(name, values, shape)
        for name, buf, event in self.raws:
            if event is not None:
                event.synchronize()  # long done by the end of the step
            core_hook.save_nocopy(name, buf)
        self.stats.clear()
        self.raws.clear()
