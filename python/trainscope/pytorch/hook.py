"""Hook: trainscope's drop-in for ``smdebug.pytorch.Hook``.

A script written for smdebug works after changing ``import smdebug.pytorch as smd`` to
``import trainscope.pytorch as smd``: same constructor, same collections and configs, same tensor
names (``Net_fc1.weight``, ``gradient/Net_fc1.weight``, ``relu_output_0``,
``CrossEntropyLoss_output_0``, ``scalar/<name>``) and the same steps.

Division of labour: this module registers PyTorch hooks and names tensors (with the core's names,
trainscope/tensor_names.h, cached per module and parameter in _names.py); the C++ hook
(``trainscope._core.Hook``, trainscope/hook.h) decides everything else: which collections are due
at which step, what each tensor gets (raw value, reductions, shape, histogram), and writes it.

Speed: a step where nothing is due runs no Python of trainscope's: the registered module's
forward pre-hook is a C function (_core's forward_pre_hook) that makes the step boundary (and,
with the profiler, the step's span) in C++, and the module and gradient hooks are attached only
while a step saves; no tensor is touched and the device is never synced.
On a saving step a CPU tensor goes to C++ through DLPack without a copy; the C++ core computes
all its reductions in one pass with the GIL released, and copies a raw value once into the
writer's queue. Tensors on a GPU are reduced on the GPU; their statistics cross to the host in
one transfer per step, and raw values are copied asynchronously into pinned memory (_device.py).

Fixes over smdebug: frozen parameters get no gradient hook; DataParallel,
DistributedDataParallel and torch.compile wrappers are looked through, so names match the plain
model; a loss module registered twice (or also part of the model) is saved once; the end marker
is written when every worker is done; the worker comes from torch.distributed or RANK and
WORLD_SIZE. Errors inside hooks never reach training: the first is printed with the tensor and
step, later ones are counted. Configuration errors raise (ValueError subclasses) when the hook is
made, or at the first step for collections configured after it was made; a collection named in
include_collections that is still undefined or empty at the first step is skipped with one
warning (the training goes on). Write failures (a full disk) are reported once with the file and
errno; the steps lost are counted in stats() and recorded in the trial. A registered model stays
picklable and copyable: copies (torch.save, copy.deepcopy, pickle) are not hooked.

Profiling: with a profiler configuration (``profiler_config=``, TRAINSCOPE_PROFILER_CONFIG or
SMPROFILER_CONFIG_PATH) the hook records step, forward, backward, optimizer, data-loader and user
(``with hook.profile("name"):``) spans, torch.profiler and cProfile windows, and optionally system
metrics; see trainscope.profiler and docs/formats/framework_profiling.md. Without one, no
profiling callback is installed.
"""

import atexit
import contextlib
import os
import sys
import time
import weakref

import torch

from .. import _pre_call
from .. import modes as _modes
from .._native import load as _load_core
from ..exceptions import SMDebugError, SMDebugTypeError, SMDebugValueError, TrainingStopped
from . import _configs, singleton
from .._closures import ClosureRecorder, closure_of, with_closure
from ._device import DeviceStepBuffer
from ._names import TensorNames
from .collection import Collection, CollectionKeys

DEFAULT_INCLUDE_COLLECTIONS = [CollectionKeys.LOSSES]
_NULL_SPAN = contextlib.nullcontext()
_BOUNDARY_SAVING = 1  # _core.BOUNDARY_SAVING ... (checked against _core when a hook is made)
_BOUNDARY_PHASES = 2
_BOUNDARY_STOPPED = 4
_now_ns = time.time_ns


def _value_error(e):
    return SMDebugValueError(getattr(e, "message", None) or str(e))


def _dist_rank_world():
    """(rank, world size) from torch.distributed when it is initialised, else (None, None)."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:  # a broken distributed set-up is not the hook's to report
        pass
    return None, None


def _imported_attr(module_name, attr):
    """`module_name.attr` when that module is already imported, else None. An object of a class
    exists only once its module has run, so a wrapper type not imported yet wraps nothing; importing
    it to ask would cost the training torch._dynamo (0.9 s) or FSDP (0.4 s) that it never uses."""
    mod = sys.modules.get(module_name)
    return getattr(mod, attr, None) if mod is not None else None


# Reinforcement-learning environment and agent libraries (docs/formats/trial.md,
# _meta.environments): a training that imported one optimises an agent's losses.
_RL_MODULES = ("gymnasium", "gym", "dm_env", "dm_control", "pettingzoo", "envpool", "ale_py",
               "procgen", "vizdoom", "nle", "minigrid", "stable_baselines3", "sb3_contrib",
               "tianshou", "torchrl", "pufferlib", "ray.rllib")


def _rl_environments():
    """The names of _RL_MODULES already imported, sorted (nothing is imported to ask)."""
    return sorted(m for m in _RL_MODULES if m in sys.modules)


def _compiled_type():
    return _imported_attr("torch._dynamo.eval_frame", "OptimizedModule")


def _fsdp_type():
    return _imported_attr("torch.distributed.fsdp.fully_sharded_data_parallel",
                          "FullyShardedDataParallel")


def _unwrap(module):
    """The module whose names a user sees: through DataParallel, DDP, FSDP and torch.compile."""
    compiled = _compiled_type()
    fsdp = _fsdp_type()
    wrappers = (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)
    if fsdp is not None:
        wrappers += (fsdp,)
    is_compiled = False
    while True:
        if isinstance(module, wrappers):
            module = module.module
        elif compiled is not None and isinstance(module, compiled):
            module = module._orig_mod
            is_compiled = True
        else:
            return module, is_compiled


def _flatten_names(items):
    out = []
    for x in items or []:
        if isinstance(x, (list, tuple, set)):
            out.extend(_flatten_names(x))
        else:
            out.append(getattr(x, "name", x))
    return [str(x) for x in out]


# Module attributes and hook dicts that trainscope adds to a registered module.
_TS_ATTR_PREFIX = "_ts_"
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")
_HOOK_ID_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                  "_forward_hooks_always_called")


def _is_trainscope_callback(fn):
    return (getattr(fn, "__module__", None) or "").startswith("trainscope.")


class _StateWithoutTrainscope:
    """``module.__getstate__`` of a module trainscope hooks (an instance attribute, which pickle
    and copy look up before the class's): the module's own state without trainscope's hooks and
    ``_ts_*`` attributes. So ``torch.save(model)``, ``copy.deepcopy``, ``copy.copy``,
    ``pickle.dumps`` and multiprocessing give a plain copy that is NOT hooked (its forward passes
    are no steps and save nothing; register it to a hook of its own if it should be captured)
    and that loads without trainscope installed; the original stays hooked. The parameters'
    gradient hooks are not copied by PyTorch itself (Parameter drops hooks when pickled)."""

    __slots__ = ("_module",)

    def __init__(self, module):
        self._module = weakref.ref(module)

    def __call__(self):
        module = self._module()
        state = type(module).__getstate__(module)  # Module's own: a copy of __dict__
        if not isinstance(state, dict):
            return state
        if state is module.__dict__:
            state = dict(state)
        state.pop("__getstate__", None)
        for key in [k for k in state if isinstance(k, str) and k.startswith(_TS_ATTR_PREFIX)]:
            del state[key]
        ours = set()
        for key in _HOOK_DICTS:
            hooks = state.get(key)
            if hooks:
                mine = {i for i, fn in hooks.items() if _is_trainscope_callback(fn)}
                if mine:
                    state[key] = type(hooks)((i, fn) for i, fn in hooks.items() if i not in mine)
                    ours |= mine
        for key in _HOOK_ID_DICTS:
            ids = state.get(key)
            if ids and ours & ids.keys():
                state[key] = type(ids)((i, v) for i, v in ids.items() if i not in ours)
        return state


def _copy_unhooked(module):
    """Makes copies and pickles of `module` unhooked (see _StateWithoutTrainscope)."""
    if not isinstance(module.__dict__.get("__getstate__"), _StateWithoutTrainscope):
        module.__dict__["__getstate__"] = _StateWithoutTrainscope(module)


class _StepNumber(int):
    """``hook.step`` is the current global step (an int, as in smdebug) and ``hook.step()``
    marks a step boundary (trainscope's explicit step)."""

    def __new__(cls, value, hook):
        obj = super().__new__(cls, value)
        obj._hook = hook
        return obj

    def __call__(self):
        self._hook._explicit_step()



def _warn_if_not_watched(out_dir):
    """Under `trainscope run`, which watches the trial at TRAINSCOPE_OUT_DIR (its --out), a hook
    writing elsewhere is saved but never checked by the rules: say so once, with the fix."""
    watched = os.environ.get("TRAINSCOPE_OUT_DIR")
    if os.environ.get("TRAINSCOPE_RUN") != "1" or not watched:
        return
    if os.path.realpath(out_dir) == os.path.realpath(watched):
        return
    print(f"trainscope: this hook writes its trial to {out_dir}, but `trainscope run` watches "
          f"{watched} (its --out): the rules will see none of this hook's data. Make the hook "
          "with Hook.create_from_json_file() (it reads the run's configuration), or run "
          f"trainscope run --out {out_dir}", file=sys.stderr, flush=True)


class _CoreName:
    """A class attribute read from _core when first used (smdebug's Hook.GRADIENT_PREFIX and
    friends; the core makes every tensor name, trainscope/tensor_names.h)."""

    def __init__(self, attr):
        self._attr = attr

    def __get__(self, obj, cls=None):
        return getattr(_load_core(), self._attr)


class Hook:
    GRADIENT_PREFIX = _CoreName("GRADIENT_PREFIX")
    SCALAR_PREFIX = _CoreName("SCALAR_PREFIX")
    INPUT_TENSOR_SUFFIX = _CoreName("INPUT_TENSOR_SUFFIX")
    OUTPUT_TENSOR_SUFFIX = _CoreName("OUTPUT_TENSOR_SUFFIX")

    def __init__(
        self,
        out_dir=None,
        export_tensorboard=False,
        tensorboard_dir=None,
        dry_run=False,
        reduction_config=None,
        save_config=None,
        include_regex=None,
        include_collections=None,
        save_all=False,
        include_workers="one",
        *,
        rank=None,
        world_size=None,
        quiet=False,
        profiler_config=None,
        _core_hook=None,
        _hook_json_path=None,
    ):
        core = _load_core()
        if _core_hook is None:
            if out_dir is None:
                raise SMDebugValueError("out_dir is a required argument: the folder for the trial")
            if rank is None:
                rank, world_size = _dist_rank_world()
            if isinstance(include_regex, str):
                include_regex = [include_regex]
            config = {
                "out_dir": os.path.expanduser(str(out_dir)),
                "export_tensorboard": bool(export_tensorboard),
                "tensorboard_dir": None if tensorboard_dir is None
                else os.path.expanduser(str(tensorboard_dir)),
                "dry_run": bool(dry_run),
                "reduction_config": _configs.reduction_config_dict(reduction_config),
                "save_config": _configs.save_config_dict(save_config),
                "include_regex": None if include_regex is None else [str(r) for r in include_regex],
                "include_collections": None if include_collections is None
                else _flatten_names(include_collections),
                "default_include_collections": DEFAULT_INCLUDE_COLLECTIONS,
                "save_all": bool(save_all),
                "include_workers": include_workers,
                "rank": rank,
                "world_size": world_size,
                "quiet": bool(quiet),
            }
            try:
                _core_hook = core.Hook(config)
            except ValueError as e:
                raise _value_error(e) from None
        self._c = _core_hook
        summary = self._c.config()
        self.out_dir = summary["out_dir"]
        self.dry_run = summary["dry_run"]
        if not self.dry_run:
            _warn_if_not_watched(self.out_dir)
        self.save_all = summary["save_all"]
        self.include_regex = summary["include_regex"]
        self.tensorboard_dir = summary["tensorboard_dir"] or (
            os.path.join(self.out_dir, "tensorboard") if summary["export_tensorboard"] else None)
        self.include_collections = sorted(
            set(summary["include_collections"] or []) | set(DEFAULT_INCLUDE_COLLECTIONS))
        self.worker = self._c.worker

        if (core.BOUNDARY_SAVING, core.BOUNDARY_PHASES, core.BOUNDARY_STOPPED) != (
                _BOUNDARY_SAVING, _BOUNDARY_PHASES, _BOUNDARY_STOPPED):
            raise ImportError("trainscope._core does not match this trainscope package: "
                              "reinstall trainscope")
        self._saving = False  # the one flag every hook tests first
        self._fast = False  # the next step boundary may take the fast path (_boundary)
        self._explicit_steps = False
        self._environments = None  # _meta.environments as recorded (_note_environments)
        self._prepared = False
        self._closed = False
        self._io_counts = {}  # IndexedNames -> how many of its names this step used
        self._names = TensorNames()  # every name made by the core, cached
        self._io_names = {}  # module name -> (IndexedNames of its inputs, of its outputs)
        self._params = []  # (tensor name, parameter) of every registered module
        self._registered = set()  # id() of modules with our forward hook
        # (name, class) of each module in the order its forward call first finished, during the
        # first step that ran any: handed to the core at the next boundary (_meta.modules), then
        # None (nothing more is recorded).
        self._order = []
        self._order_seen = set()
        self._top_modules = []
        self._handles = []
        self._pre_calls = []  # _pre_call.Handle in front of a module's call (check() each step)
        # The forward hooks of modules and the gradient hooks of parameters are attached only
        # while a step saves (and during the first step, whose module order is noted): a step
        # that saves nothing runs no trainscope callback but the step boundary's, and PyTorch's
        # modules take their hook-free fast path. Entries: (module, its forward callback, False)
        # for a forward hook, (parameter, its gradient callback, True) for a gradient hook;
        # _add_saving_hook and _add_saving_forward_hook add them.
        # Re-attached hooks run after hooks the script added since (PyTorch runs hooks in the
        # order they were added).
        self._saving_hooks = []
        self._saving_handles = []
        self._saving_hooks_on = True  # attached at registration, for the first step
        self._wrappers = {}  # collection name -> Collection
        # Which loss outputs each closure evaluation of an optimizer step saved (LBFGS calls
        # its closure up to 20 times a step): handed to the core at the step boundary
        # (index meta.closure_evaluations, docs/formats/index.md).
        self._closures = ClosureRecorder()
        self._optimizer_handle = None
        if self._WATCH_CLOSURES:
            self._watch_closures()
        self._device = DeviceStepBuffer(core.STATS_FIELDS)
        # Framework metrics (trainscope.profiler): None when the profiler is off, and then no
        # profiling callback exists anywhere (the only cost is this attribute's None tests).
        self._prof = None
        self._init_profiler(profiler_config, _hook_json_path)
        singleton.set_hook(self)
        atexit.register(self._atexit)

    # The closures of optimizer steps are wrapped by a global optimizer step pre-hook; the
    # automatic mode's hook (made inside one, when PyTorch forbids adding another) is handed them
    # by its session instead.
    _WATCH_CLOSURES = True

    # Each registered module's forward call is a step boundary until hook.step() is called (the
    # hook's C forward pre-hook); the automatic mode's hook has its own boundaries instead.
    _STEP_PRE_HOOK = True

    def _watch_closures(self):
        try:
            from torch.optim.optimizer import register_optimizer_step_pre_hook
        except ImportError:  # torch < 2.0: no global optimizer hooks, no closure record
            return
        # Behind a C gate: a step that saves nothing, whose boundaries in front of a module's
        # call all ran, pays no Python frame.
        self._optimizer_handle = register_optimizer_step_pre_hook(
            _pre_call.gate(self, "_saving", self._optimizer_pre, handles="_pre_calls"))

    def _optimizer_pre(self, optimizer, args, kwargs):
        """A step given a closure, on a saving step: the closure wrapped so that each call of it
        is one evaluation (_closures.py). Also notices a registered model compiled with
        module.compile() since (its step boundary moves to a forward pre-hook: _pre_call.py)."""
        if self._pre_calls:
            self._pre_calls = _pre_call.check_all(self._pre_calls)
        if not self._saving:
            return None
        try:
            closure, where = closure_of(args, kwargs)
            if closure is None:
                return None
            return with_closure(args, kwargs, where, self._closures.wrap(self, optimizer, closure))
        except Exception as e:
            self._report("(optimizer closure)", e)
            return None

    def _record_closures(self):
        """Hands the ending step's closure record to the core (its index meta)."""
        try:
            steps = self._closures.take()
            if steps:
                self._c.set_closure_steps(steps)
        except Exception as e:
            self._report("(closure evaluations)", e)

    # ---- construction from JSON --------------------------------------------------------------

    @classmethod
    def create_from_json_file(cls, json_file_path=None):
        """A hook from smdebug's JSON configuration: `json_file_path`, else TRAINSCOPE_CONFIG,
        else SMDEBUG_CONFIG_FILE_PATH, else /opt/ml/input/config/debughookconfig.json.
        FileNotFoundError if the file does not exist."""
        path = json_file_path or os.environ.get("TRAINSCOPE_CONFIG") or os.environ.get(
            "SMDEBUG_CONFIG_FILE_PATH") or "/opt/ml/input/config/debughookconfig.json"
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"no hook configuration at {path}: set TRAINSCOPE_CONFIG (or "
                "SMDEBUG_CONFIG_FILE_PATH) to smdebug's JSON hook configuration")
        rank, world = _dist_rank_world()
        overrides = {} if rank is None else {"rank": rank, "world_size": world}
        try:
            core_hook = _load_core().Hook.from_json_file(path, overrides)
        except ValueError as e:
            raise _value_error(e) from None
        hook = cls(_core_hook=core_hook, _hook_json_path=path)
        hook._prepared = True  # a JSON configuration was checked whole
        return hook

    # ---- steps and modes ---------------------------------------------------------------------

    @property
    def step(self):
        return _StepNumber(self._c.step_number, self)

    @property
    def mode(self):
        return _modes.ModeKeys(self._c.mode)

    @property
    def mode_step(self):
        return self._c.mode_step

    def set_mode(self, mode):
        try:
            m = _modes.to_mode(mode)
        except ValueError:
            raise SMDebugValueError(
                f"Invalid mode {mode}. Valid modes are {','.join(_modes.ALLOWED_MODE_NAMES)}."
            ) from None
        if self._prof is not None:
            self._c.end_step_timeline()  # the step's span, with its model calls
            self._prof.on_mode_change()
        self._c.set_mode(m.value)

    def _explicit_step(self):
        """hook.step(): a step boundary. From the first call on, forward passes of the
        registered module no longer mark steps."""
        if not self._explicit_steps:
            self._explicit_steps = True
            self._c.explicit_steps = True
        self._boundary()

    def _note_environments(self):
        """Records the reinforcement-learning libraries imported so far (_meta.environments)."""
        found, before = _rl_environments(), self._environments or []
        self._environments = found
        if found != before:
            self._c.set_environments(found)

    def _prepare(self):
        for c in self._wrappers.values():
            c._apply_modules()
        try:
            self._c.prepare()
        except ValueError as e:
            raise _value_error(e) from None
        self._prepared = True

    def _boundary(self, module=None, flags=None):
        """A step boundary; `module` is the registered module whose forward call made it.
        `flags`: the forward pre-hook ran the C++ boundary already (the fast path) and these
        are its flags.

        A step that saves nothing and records no profiler phases, after one like it, is the
        fast path: one call into C++ (the step and its Step span), nothing else; the forward
        pre-hook makes that call itself, without Python."""
        if flags is None:
            if self._fast:
                flags = self._c.boundary()
                if not flags:
                    return
            elif self._closed:
                return
            else:
                self._before_step()
                flags = self._c.boundary()
        # A rule's stop action writes <trial>/rule-output/stop_training.json
        # (docs/formats/stop_signal.md); the C++ step boundary checks it (one access(2), at most
        # every 10 ms), and on the
        # first sight closes the trial, says why on stderr and returns BOUNDARY_STOPPED.
        if flags & _BOUNDARY_STOPPED:
            self._saving = False
            self._set_fast(False)
            self._stop_requested(self._c.stop_reason["text"])
        saving = bool(flags & _BOUNDARY_SAVING)
        self._saving = saving
        if saving != self._saving_hooks_on:
            self._set_saving_hooks(saving)
        if self._io_counts:
            self._io_counts.clear()
        if saving:
            self._save_params()
        prof = self._prof
        if prof is not None:
            # `module`: the boundary ran among its forward pre-hooks, so the phases' pre-hook
            # added now misses this call and forward's time starts here; None where it ran in
            # front of the call (_pre_call.py), which runs the new pre-hook next.
            in_front = module is not None and _pre_call.in_front(module)
            prof.set_phases(bool(flags & _BOUNDARY_PHASES), None if in_front else module)
            if prof.per_step:
                prof.on_step(self._c.mode, self._c.step_number)
        # The next boundary may take the fast path when this step is a plain one: nothing
        # saved, no phases, nothing pending from the first step, no per-step profiler work.
        self._set_fast(not flags and not self._order and not self._closed
                       and (prof is None or not prof.per_step))

    def _before_step(self):
        """What a boundary off the fast path does before the C++ step."""
        if not self._prepared:
            self._prepare()  # configuration errors raise here, before the first step runs
        if self._environments is None:  # the first step: before the collections file is written
            try:
                self._note_environments()
            except Exception as e:
                self._report("(environments)", e)
        if self._device:
            self._flush_device()
        if self._order:  # the first step ran: its module order goes into the collections file
            try:
                self._c.set_module_order(self._order)
                self._note_environments()  # imported by the end of the first step
            except Exception as e:
                self._report("(module order)", e)
            self._order = self._order_seen = None
        if self._closures.steps:
            self._record_closures()

    def _set_fast(self, fast):
        if fast != self._fast:
            self._fast = fast
            self._c.fast = fast

    def _stop_requested(self, reason):
        """A rule (or a person) asked the training to stop, and the step boundary closed the
        trial and said why: close the rest (profiler) and end the process cleanly
        (TrainingStopped is a SystemExit, so `except Exception` in a training loop does not
        swallow it)."""
        try:
            self.close()
        finally:
            raise TrainingStopped(reason)

    def _flush_device(self):
        try:
            self._device.flush(self._c)
        except Exception as e:  # fail open
            self._device.stats.clear()
            self._device.raws.clear()
            self._report("(device statistics)", e)

    def _save_params(self):
        cpu = []
        for name, p in self._params:
            if p.is_cpu:  # (1.5 us cheaper than p.device.type)
                cpu.append((name, p))
            else:
                self._save(name, p)
        if cpu:
            self._c.save_many(cpu)

    # ---- registration ------------------------------------------------------------------------

    def register_module(self, module):
        """Saves the parameters, gradients and (if collections ask) inputs and outputs of
        `module` and its submodules. Each forward call of `module` is a step boundary (unless
        hook.step() is used)."""
        if not isinstance(module, torch.nn.Module):
            raise SMDebugTypeError(
                f"Module type {module.__class__.__name__} must be type torch.nn.Module")
        top, compiled = _unwrap(module)
        if id(top) in self._registered or top in self._top_modules:
            raise SMDebugValueError(f"module {top._get_name()} is registered already")
        top_name = top._get_name()
        for name, sub in top.named_modules():
            if sub is not top and "_ts_name" in sub.__dict__ and id(sub) in self._registered:
                raise SMDebugValueError(f"module {name} is registered already")
            sub._ts_name = top_name if sub is top else self._names.user_path(name)
        self._top_modules.append(top)
        _copy_unhooked(module)
        for sub in top.modules():
            _copy_unhooked(sub)
        if self._STEP_PRE_HOOK:
            if self._c.slow is None:
                self._c.slow = self._forward_pre_slow
            # In front of the module's call where it can (_pre_call.py): a pre-hook registered
            # the usual way costs every call PyTorch's slow call path (4.6 us on an MLP).
            prehook = self._c.forward_pre_hook()
            if compiled:
                handle = _pre_call.Handle(module, prehook, None)
            else:
                handle = _pre_call.attach(module, prehook)
            self._handles.append(handle)
            if handle.in_front:
                self._pre_calls.append(handle)
        if self._prof is not None:  # after the step boundary's pre-hook: forward starts after it
            self._prof.attach_module(module, top_name)
        if compiled:
            # Hooks inside a compiled graph would break it: the wrapper's output only.
            module._ts_name = top_name
            self._add_forward_hook(module, always=True)
        else:
            for sub in top.modules():
                self._add_forward_hook(sub)
        self._attach_activation_modules(top)
        for pname, p in top.named_parameters():
            name = self._names.parameter(top_name, pname)
            self._params.append((name, p))
            self._c.set_parameter_trainable(name, bool(p.requires_grad))  # _meta.parameters
            if p.requires_grad:  # frozen parameters get no gradient hook
                self._add_saving_hook(p, self._grad_hook(self._names.gradient(name)))

    register_hook = register_module  # smdebug's alias

    # Activation modules, by the collections the activation rules ask for. smdebug's regexes
    # (".*relu_output") only match modules *named* relu; in nn.Sequential a ReLU is named "1"
    # ("1_output_0"). So when one of these collections is configured, the hook adds the matching
    # modules' tensors to it by type, whatever their names (smdebug's add_module_tensors).
    _ACTIVATION_COLLECTIONS = (
        ("relu_output", (torch.nn.ReLU, torch.nn.ReLU6, torch.nn.LeakyReLU, torch.nn.RReLU),
         False, True),
        ("relu_input", (torch.nn.ReLU, torch.nn.ReLU6, torch.nn.LeakyReLU, torch.nn.RReLU),
         True, False),
        ("saturated_activation_inputs", (torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.Hardtanh,
                                         torch.nn.Hardsigmoid), True, False),
    )

    def _attach_activation_modules(self, top):
        configured = set(self._c.collection_names())
        for cname, types, inputs, outputs in self._ACTIVATION_COLLECTIONS:
            if cname not in configured:
                continue
            coll = self.get_collection(cname)
            for sub in top.modules():
                if isinstance(sub, types) and sub is not top:
                    coll.add_module_tensors(sub, inputs=inputs, outputs=outputs)
            coll._apply_modules()  # the modules are named already

    def register_loss(self, loss_module):
        """Saves the output of a loss module as <LossClass>_output_0 (collection losses)."""
        if not isinstance(loss_module, torch.nn.Module):
            raise SMDebugTypeError(
                f"loss_module={loss_module} must be a torch.nn.Module such as "
                "nn.CrossEntropyLoss()")
        loss_module._ts_name = loss_module._get_name()
        self._names.outputs(loss_module._ts_name).loss = True
        _copy_unhooked(loss_module)
        self._add_forward_hook(loss_module)  # once, even if it is part of a registered module

    def _add_forward_hook(self, module, always=False):
        """`always`: attached for good (a compiled model's wrapper: adding and removing hooks on
        it between steps could make torch.compile guard on them); else only on saving steps."""
        if id(module) in self._registered:
            return
        self._registered.add(id(module))
        if always:
            self._handles.append(module.register_forward_hook(self._forward_hook))
        else:
            self._add_saving_forward_hook(module, self._forward_hook)

    def _add_saving_hook(self, target, grad_hook):
        """A gradient hook on tensor `target`, attached only while a step saves."""
        self._add_saving_entry((target, grad_hook, True))

    def _add_saving_forward_hook(self, module, fn):
        """A forward hook on `module`, attached only while a step saves."""
        self._add_saving_entry((module, fn, False))

    def _add_saving_entry(self, entry):
        self._saving_hooks.append(entry)
        if self._saving_hooks_on:
            self._saving_handles.append(self._attach(entry))

    @staticmethod
    def _attach(entry):
        target, fn, grad = entry
        if grad:
            return target.register_hook(fn)
        return target.register_forward_hook(fn)

    def _set_saving_hooks(self, on):
        """Attaches (on) or removes the forward and gradient hooks that only saving steps need."""
        self._saving_hooks_on = on
        handles, self._saving_handles = self._saving_handles, []
        for h in handles:
            h.remove()
        if on:
            self._saving_handles = [self._attach(e) for e in self._saving_hooks]
            return
        for target, _, grad in self._saving_hooks:
            # A parameter whose last Python gradient hook was removed keeps PyTorch's C++
            # pre-hook for its (now empty) hook dict, and every backward still takes the GIL and
            # wraps the gradient to call it: None clears it (PyTorch adds it again with the next
            # register_hook). A dict holding the script's own hooks stays.
            if grad and isinstance(target, torch.Tensor):
                if target._backward_hooks is not None and not target._backward_hooks:
                    target._backward_hooks = None

    # ---- the PyTorch callbacks (hot path) ----------------------------------------------------

    def _forward_pre_slow(self, module, flags=None):
        """The registered modules' forward pre-hook (_core's forward_pre_hook, a C function)
        calls this when the boundary needs Python: _boundary(module, flags)."""
        try:
            self._boundary(module, flags)
        except SMDebugValueError:
            raise  # a configuration error, before the first step
        except Exception as e:
            self._report("(step boundary)", e)

    def _forward_hook(self, module, inputs, outputs):
        if self._order is not None:
            self._note_order(module)
        if not self._saving:
            return
        name = module.__dict__.get("_ts_name")
        if name is None:
            return
        try:
            io = self._io_names.get(name)
            if io is None:
                io = self._io_names[name] = (self._names.inputs(name), self._names.outputs(name))
            self._write_io(io[0], inputs)
            self._write_io(io[1], outputs)
        except Exception as e:
            self._report(name, e)

    def _grad_hook(self, gname):
        def hook(grad):
            if self._saving and grad is not None:
                try:
                    self._save(gname, grad)
                except Exception as e:
                    self._report(gname, e)

        return hook

    def _note_order(self, module):
        name = module.__dict__.get("_ts_name")
        if name is not None and name not in self._order_seen:
            self._order_seen.add(name)
            self._order.append((name, module._get_name()))

    def _write_io(self, names, value):
        """Saves the tensors of `value` (nested tuples and lists) under the next of `names`
        (an IndexedNames: "<module>_output_<i>"...), counting on from earlier calls this step."""
        counts = self._io_counts
        first = counts.get(names, 0)
        counts[names] = end = self._write_nested(names, value, first)
        evaluation = self._closures.evaluation
        if evaluation is not None and names.loss:  # inside a closure evaluation (LBFGS)
            plan = self._c.plan
            evaluation.extend(n for n in map(names.at, range(first, end)) if plan(n) is not None)

    def _write_nested(self, names, var, idx):
        if isinstance(var, torch.Tensor):
            self._save(names.at(idx), var)
            return idx + 1
        if isinstance(var, (tuple, list)):
            for v in var:
                idx = self._write_nested(names, v, idx)
        return idx

    def _save(self, name, t):
        if t.is_cpu:
            self._c.save(name, t)
            return
        plan = self._c.plan(name)
        if plan is not None:
            self._device.add(name, t, plan)

    def _report(self, where, e):
        try:
            self._c.report_error(str(where), f"{type(e).__name__}: {e}")
        except Exception:
            pass

    # ---- user API ----------------------------------------------------------------------------

    def record_tensor_value(self, tensor_name, tensor_value):
        """Saves a value computed outside a module (e.g. F.mse_loss) as <name>_output_<i>."""
        if not isinstance(tensor_value, torch.Tensor):
            raise SMDebugTypeError(f"tensor_value={tensor_value} must be torch.Tensor")
        if self._saving:
            try:
                names = self._names.outputs(tensor_name)
                names.loss = True
                self._write_io(names, tensor_value)
            except Exception as e:
                self._report(tensor_name, e)

    def save_scalar(self, name, value, sm_metric=False, timestamp=None):
        """Saves scalar/<name> at the current step (every step, whatever the collections);
        `timestamp` (epoch seconds, default now) is its event's wall_time, in the trial and in
        TensorBoard. Before the first step it is saved at step 0."""
        v = value
        if isinstance(v, torch.Tensor):
            if v.numel() != 1:
                raise self._not_scalar(name, value)
            v = v.detach().reshape(()).item()
        elif hasattr(v, "size") and hasattr(v, "item"):  # numpy
            if v.size != 1:
                raise self._not_scalar(name, value)
            v = v.item()
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise self._not_scalar(name, value) from None
        wall_time = 0.0
        if timestamp is not None:
            try:
                wall_time = float(timestamp)
            except (TypeError, ValueError):
                raise SMDebugTypeError(
                    f"save_scalar({name!r}): timestamp={timestamp!r} must be epoch seconds "
                    "(a number such as time.time()), or None for now") from None
        self._c.save_scalar(str(name), v, wall_time)

    def _not_scalar(self, name, value):
        scalar = self._names.scalar(str(name))
        return SMDebugTypeError(f"{scalar} has non scalar value of type: {type(value)}")

    def save_tensor(self, tensor_name, tensor_value, collections_to_write=CollectionKeys.DEFAULT):
        """Saves a value under its own name in `collections_to_write` (created if needed), at the
        current step if a collection it belongs to is due."""
        colls = [collections_to_write] if isinstance(collections_to_write, str) else list(
            collections_to_write)
        colls = _flatten_names(colls)
        value = tensor_value
        if isinstance(value, torch.Tensor):
            value = value.detach()
            if value.device.type != "cpu":
                value = value.cpu()
        self._c.save_custom(str(tensor_name), value, colls)

    def get_collection(self, name, create=True):
        c = self._c.get_collection(str(name), create)
        if c is None:
            raise SMDebugError(f"Collection {name} has not been created")
        w = self._wrappers.get(name)
        if w is None or not w._c.same_as(c):
            w = Collection(name, _core_collection=c)
            self._wrappers[name] = w
        return w

    def get_collections(self):
        return {n: self.get_collection(n) for n in self._c.collection_names()}

    def add_collection(self, collection):
        if not isinstance(collection, Collection):
            raise SMDebugTypeError(
                "collection must be an instance of Collection class. "
                f"value of type {collection.__class__} is not supported")
        self._c.add_collection(collection._c)
        self._wrappers[collection.name] = collection

    def has_default_configuration(self):
        if not self._prepared:
            self._prepare()
        return set(self._c.saved_collections()) == set(DEFAULT_INCLUDE_COLLECTIONS)

    has_default_hook_configuration = has_default_configuration

    # smdebug's names for the judging of the collections to save (at the first step, or by
    # has_default_configuration()): code written for smdebug reads the flag, and sets it after
    # preparing them itself (docs/compat.md).
    @property
    def prepared_collections(self):
        """Whether the collections to save have been judged (a hook from a JSON configuration
        is judged whole when it is made)."""
        return self._prepared

    @prepared_collections.setter
    def prepared_collections(self, value):
        """True judges them now if they were not; False judges them again at the next step
        (with the collections defined since)."""
        if value and not self._prepared:
            self._prepare()
        self._prepared = bool(value)

    def _prepare_collections(self):
        """Judges the collections now, as the first step would (configuration errors raise here;
        an include_collections name still undefined or empty is skipped with one warning)."""
        self._prepare()

    def get_tensors(self):
        """{name: trainscope Tensor} of what completed steps saved so far (the step in progress
        appears once it ends). Empty for a hook that writes nothing (dry_run, other ranks)."""
        if self._device:
            self._flush_device()
        self._c.flush()
        if not self._c.writes or self._c.stats()["steps_saved"] == 0:
            return {}
        from ..trials import create_trial

        trial = create_trial(self.out_dir)
        return {n: trial.tensor(n) for n in trial.tensor_names()}

    def stats(self):
        """Counters of the C++ hook (trainscope/hook.h HookStats): steps_saved (on disk and
        readable), steps_failed (lost to write errors: a full disk, a read-only folder),
        steps_dropped (dropped by the queue policy), steps_pending (queued, not yet written;
        0 after close()), tensors_saved, reductions_saved, raw_bytes, errors, plans_built,
        out_dir_refused (another training owns out_dir: this hook saves nothing; the lock of
        docs/formats/run_lock.md). Steps lost are also recorded in the trial
        (incomplete_<worker>.json, docs/formats/trial.md)."""
        return self._c.stats()

    def close(self):
        """Ends the step, writes the collections file, waits for the writer, writes the end
        marker once every worker is done. Called at exit too."""
        if self._closed:
            return
        if self._device:
            self._flush_device()
        self._closed = True
        self._saving = False
        self._set_fast(False)
        self._c.slow = None  # (it refers to this hook: no cycle through C++ left)
        self._set_saving_hooks(False)
        if self._optimizer_handle is not None:
            self._optimizer_handle.remove()
            self._optimizer_handle = None
        if self._closures.steps:
            self._record_closures()
        if self._prof is not None:
            self._c.end_step_timeline()  # the last step's span, with its model calls
            self._c.attach_step_timeline(None)
            self._prof.close()
        self._c.close()

    # ---- profiler (framework metrics) ---------------------------------------------------------

    def _init_profiler(self, profiler_config, hook_json_path):
        """Starts the framework profiler when a configuration turns it on (the argument, a
        ProfilingParameters object in the hook's JSON, or TRAINSCOPE_PROFILER_CONFIG /
        SMPROFILER_CONFIG_PATH). An invalid configuration given as an argument raises; one
        found in a file is reported and the profiler stays off (training goes on)."""
        from ..profiler import config as _pconfig

        try:
            cfg = _pconfig.resolve(profiler_config, hook_json_path)
        except (ValueError, OSError) as e:
            if profiler_config is not None:
                raise SMDebugValueError(f"profiler_config: {e}") from None
            print(f"trainscope: profiler off: {e}", file=sys.stderr, flush=True)
            return
        if cfg is None or not cfg.enabled:
            return
        if self.dry_run:  # every worker records its own timeline (node ids differ); dry_run none
            return
        from ..profiler.recorder import FrameworkProfiler

        try:
            self._prof = FrameworkProfiler(cfg, self.out_dir, is_chief=self._is_chief_worker(),
                                           report=self._report)
            self._c.attach_step_timeline(self._prof.steps)
        except Exception as e:  # fail open: training goes on without framework metrics
            self._prof = None
            print(f"trainscope: profiler off: {type(e).__name__}: {e}", file=sys.stderr,
                  flush=True)

    def _is_chief_worker(self):
        rank, _ = _dist_rank_world()
        if rank is None:
            rank = int(os.environ.get("RANK", "0") or 0)
        return rank == 0

    def profile(self, name, **args):
        """``with hook.profile("name"):`` records the block as a UserSpan event (args become the
        event's args). A no-op context when the profiler is off."""
        if self._prof is None or self._prof.closed:
            return _NULL_SPAN
        return self._prof.user_span(name, args)

    def record_trace_events(self, timestamp, training_phase="", op_name="", phase="X",
                            duration=1, **kwargs):
        """smdebug's: writes an event the script timed itself into the framework timeline:
        `timestamp` and `duration` in seconds (epoch), `phase` "X" (complete), "B" or "E" (a
        span opened and closed on the training_phase row, written as one complete event) or
        another Chrome phase (an instant event); kwargs become the event's args. Nothing when
        the profiler is off, as in smdebug."""
        if self._prof is None or self._prof.closed:
            return
        self._prof.trace_event(training_phase, op_name, phase, timestamp, duration,
                               kwargs or None)

    # smdebug's names for two of the hook's own, which smdebug's examples and tests call.
    def _get_worker_name(self):
        return self.worker

    def _cleanup(self):
        self.close()

    def get_profiler_data(self, system=True):
        """What the profiler has captured so far (trainscope.profiler.ProfilerData): spans,
        torch.profiler trace paths, Python stats folders, and (system=True) the system metrics
        written so far under the profiler's folder. None when the profiler is off."""
        prof = self._prof
        if prof is None:
            return None
        from ..profiler import MetricsReader, ProfilerData

        prof.flush()
        sys_events = []
        if system:
            try:
                sys_events = MetricsReader(prof.base_dir).system_metrics()
            except Exception as e:
                self._report("(profiler data)", e)
        w = prof.writer
        return ProfilerData(prof.spans(), prof.detailed_traces, prof.python_stats,
                            sys_events, prof.base_dir, prof.node_id,
                            (w.events_recorded, w.events_written, w.events_dropped))

    def _atexit(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (
            f"<trainscope.pytorch.Hook out_dir={self.out_dir} worker={self.worker} "
            f"step={int(self.step)} mode={self.mode.name} include_collections="
            f"{self.include_collections} save_all={self.save_all} dry_run={self.dry_run}>")
