"""A module's forward pre-hook in front of its call, off PyTorch's slow call path.

One forward pre-hook on a module sends each of its calls through ``nn.Module._call_impl``'s slow
path (4.6 us a call on an MLP whose step takes 0.3 ms; a module without hooks runs ``forward``
on a fast path). The step boundary is such a pre-hook on each registered model, called once a
step, so trainscope puts it in front of the call instead (python/src/pre_call.cc): it sets the
module's ``_compiled_call_impl`` (which ``nn.Module.__call__`` calls when set; ``module.compile()``
sets it) to a C function that calls ``prehook(module, args)`` and then
``nn.Module._call_impl(module, *args, **kwargs)``, which runs any other hook of the module as
before. It behaves as a pre-hook registered before all others.

``attach`` falls back to ``register_forward_pre_hook`` where that would not be the same: a module
whose ``__call__`` or ``_call_impl`` is not PyTorch's, one compiled with ``module.compile()``, a
PyTorch without ``_compiled_call_impl``, a ``_core`` without ``pre_call``. If the module is
compiled after ``attach`` (``module.compile()`` replaces the function), ``Handle.check()``
notices and registers the pre-hook then. ``Module.__getstate__`` drops ``_compiled_call_impl``,
so a copy or a pickle of the module is not hooked (trainscope's pre-hooks are removed from
copies too: hook.py's _StateWithoutTrainscope).
"""

import weakref

import torch

from ._native import load as _load_core

_Module = torch.nn.Module
_ATTR = "_compiled_call_impl"


def _plain_call(cls):
    """True if calling an instance of `cls` runs nn.Module's __call__ and _call_impl."""
    return cls.__call__ is _Module.__call__ and cls._call_impl is _Module._call_impl


def _usable(module):
    return (hasattr(_Module, _ATTR) and getattr(_Module, _ATTR) is None
            and _plain_call(type(module)) and module.__dict__.get(_ATTR) is None
            and hasattr(_load_core(), "pre_call"))


class Handle:
    """``remove()`` as a RemovableHandle's; ``check()`` moves the pre-hook to
    ``register_forward_pre_hook`` if the module's call was replaced since (module.compile())."""

    __slots__ = ("_module", "_prehook", "_fn", "_fallback")

    def __init__(self, module, prehook, fn):
        self._module = weakref.ref(module)
        self._prehook = prehook
        self._fn = fn  # None: registered as a plain forward pre-hook (self._fallback)
        self._fallback = None if fn is not None else module.register_forward_pre_hook(prehook)

    @property
    def in_front(self):
        """True while the pre-hook runs in front of the call (not as a registered pre-hook)."""
        return self._fn is not None

    def check(self):
        """True if the pre-hook is still in place; else registers it as a forward pre-hook.
        Not in place: the module's call was replaced (module.compile()), or its class was
        (a wrapper that swaps it, such as FSDP2's fully_shard) for one with its own __call__ or
        _call_impl, which would not call it, or call another _call_impl than the one it calls."""
        if self._fn is None:
            return True
        module = self._module()
        if module is None:
            return True
        ours = module.__dict__.get(_ATTR) is self._fn
        if ours and _plain_call(type(module)):
            return True
        if ours:
            del module.__dict__[_ATTR]
        self._fn = None
        self._fallback = module.register_forward_pre_hook(self._prehook)
        return False

    def remove(self):
        module = self._module()
        if self._fn is not None and module is not None and module.__dict__.get(_ATTR) is self._fn:
            del module.__dict__[_ATTR]
        self._fn = None
        if self._fallback is not None:
            self._fallback.remove()
            self._fallback = None


def check_all(handles):
    """Handle.check() on each of `handles` (those in front of a call); the ones still in front
    (the same list when all are: the per-step case builds nothing)."""
    for h in handles:
        if not h.check():
            return [x for x in handles if x.check() and x.in_front]
    return handles


def gate(owner, attr, fn, handles=None):
    """`fn` behind a C function (_core.call_if) that calls it only when ``getattr(owner, attr)``
    is true: a global optimizer step hook with nothing to do on most steps then costs them no
    Python frame. With `handles` (the name of owner's list of Handle in front of a call), also
    when one of their functions did not run since the last call (_core.step_gate: the module's
    call was replaced, or it was not called; `fn` then checks them). `fn` itself without the
    C module."""
    core = _load_core()
    if handles is None:
        make = getattr(core, "call_if", None)
        return fn if make is None else make(owner, attr, fn)
    make = getattr(core, "step_gate", None)
    return fn if make is None else make(owner, attr, handles, fn)


def attach(module, prehook):
    """Runs ``prehook(module, args)`` before each call of ``module``, as a forward pre-hook
    registered first would. Returns a Handle."""
    if not _usable(module):
        return Handle(module, prehook, None)
    fn = _load_core().pre_call(prehook, weakref.ref(module), _Module._call_impl)
    module.__dict__[_ATTR] = fn
    return Handle(module, prehook, fn)


def in_front(module):
    """True if a pre-hook of trainscope's runs in front of ``module``'s call (so a forward
    pre-hook registered during it still runs for that call)."""
    fn = module.__dict__.get(_ATTR)
    return fn is not None and getattr(fn, "__name__", None) == "pre_call" and (
        getattr(fn, "__module__", None) == "trainscope._core")
