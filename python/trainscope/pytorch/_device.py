"""Tensors on an accelerator: reductions on the device, one transfer per step.

For a tensor on a GPU the hook never copies the whole tensor to compute a statistic. It asks
src/torch's TorchStatsOnDevice (trainscope/torch_stats.h, through the extension
trainscope._torch_stats) for only the statistics the plan needs (the TensorStats fields its
reductions read: the plan's "fields", from the core's FieldsRead; names as in _core.STATS_FIELDS),
which it computes with torch operations on the device and returns as one small float64 tensor
there, without waiting. The hook queues that tensor, and at the end of the step moves every queued
statistic to the host in ONE transfer (torch.cat(...).cpu()).
When a raw value, a histogram or a TensorBoard scalar is due, the tensor is copied to the host
instead and the core computes everything from that copy (as for a CPU tensor; TorchHook decides
the same): the copy goes with non_blocking=True into pinned host memory (PyTorch's caching host
allocator reuses it) and a CUDA event is recorded; at the end of the step the event has long
completed, and the buffer goes to the writer without a copy.

No statistic is computed here: the one implementation is C++'s. When the extension cannot be
loaded (trainscope was installed without torch, or torch was upgraded after trainscope was
installed, so the extension no longer matches torch's ABI) every device tensor takes the host copy
above instead, and a warning says so once, with the fix.

The same code runs on CPU tensors (tests use it to check the statistics against the C++ core's).
"""

import importlib
import threading
import warnings

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


# The extension, loaded at the first tensor on a device: (stats_on_device or None, why not).
_extension = None
_extension_lock = threading.Lock()  # gradient hooks may run on autograd's threads


def _load_extension():
    """trainscope._torch_stats.stats_on_device, checked against the torch running now; raises
    ImportError saying why it cannot be used."""
    _torch_stats = importlib.import_module("trainscope._torch_stats")
    if _torch_stats.TORCH_VERSION != torch.__version__:
        raise ImportError(f"trainscope._torch_stats was built against torch "
                          f"{_torch_stats.TORCH_VERSION}, but torch {torch.__version__} is "
                          "running")
    return _torch_stats.stats_on_device


def stats_function():
    """The on-device statistics (_torch_stats.stats_on_device), or None when the extension cannot
    be used: then the first call warns, once, why and how to fix it."""
    global _extension
    if _extension is None:
        with _extension_lock:
            if _extension is None:
                try:
                    _extension = (_load_extension(), None)
                except ImportError as e:
                    _extension = (None, str(e))
                    warnings.warn(fallback_message(_extension[1]), RuntimeWarning,
                                  stacklevel=2)
    return _extension[0]


def fallback_message(cause):
    """The warning given when the extension cannot be used."""
    return (f"trainscope: the on-device statistics (trainscope._torch_stats) cannot be used "
            f"with this torch ({cause}); tensors on a GPU are copied to the host and reduced "
            "there, which is slower. To fix it, reinstall trainscope against the current torch, "
            "from its source, e.g. `python -m pip install --force-reinstall --no-deps "
            "--no-build-isolation /path/to/trainscope` (or scripts/setup.sh in a checkout).")


def device_stats(t, fields):
    """The statistics `fields` (names as in _core.STATS_FIELDS) of tensor `t`, as one 1-D
    float64 tensor on t's device in STATS_FIELDS order ("count" left out), computed where t lives
    and not synced: TorchStatsOnDevice. None when the extension cannot be used."""
    fn = stats_function()
    return None if fn is None else fn(t.detach(), fields)


class DeviceStepBuffer:
    """What one step queued for its end: statistics on the device, host copies in pinned memory."""

    def __init__(self, stats_fields):
        self._all_fields = list(stats_fields)  # _core.STATS_FIELDS
        self._index = {f: i for i, f in enumerate(self._all_fields)}
        self.stats = []  # (name, shape, numel, fields, 1-D tensor of their values)
        self.raws = []  # (name, host tensor, event)

    def __bool__(self):
        return bool(self.stats or self.raws)

    def add(self, name, t, plan):
        """Queues what `plan` (a dict from _core.Hook.plan) asks for `t`."""
        if not (plan["save_raw"] or plan["histogram_tag"] or plan["tensorboard_scalar"]):
            if not (plan["reductions"] or plan["save_shape"]):
                return
            fields = plan["fields"]  # FieldsRead(plan["reductions"]), from the core
            values = device_stats(t, fields)
            if values is not None:
                self.stats.append((name, list(t.shape), t.numel(), fields, values))
                return
        # A raw value, a histogram or a TensorBoard scalar is due (or the extension cannot be
        # used): the host copy, from which the core computes whatever the plan asks, as for a
        # tensor on the CPU.
        src = t.detach()
        if t.device.type == "cuda":
            buf = torch.empty(src.shape, dtype=src.dtype, pin_memory=True)
            buf.copy_(src, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
        else:
            buf, event = src.to("cpu", copy=True), None
        self.raws.append((name, buf, event))

    def flush(self, core_hook):
        """Moves every queued statistic to the host in one transfer and hands everything to the
        C++ hook (which must still be in the step the values belong to)."""
        if self.stats:
            host = torch.cat([entry[4] for entry in self.stats]).cpu().tolist()  # one transfer
            pos = 0
            index = self._index
            for name, shape, numel, fields, _ in self.stats:
                values = [0.0] * len(self._all_fields)
                values[index["count"]] = float(numel)
                values[index["prod"]] = 1.0
                values[index["abs_prod"]] = 1.0
                # The values come in STATS_FIELDS order (TorchStatsOnDevice's contract).
                for f in sorted((f for f in fields if f != "count"), key=index.__getitem__):
                    values[index[f]] = host[pos]
                    pos += 1
                core_hook.save_stats(name, values, shape)
        for name, buf, event in self.raws:
            if event is not None:
                event.synchronize()  # long done by the end of the step
            core_hook.save_nocopy(name, buf)
        self.stats.clear()
        self.raws.clear()
