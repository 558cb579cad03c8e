"""The automatic mode's session: PyTorch's global hooks drive a trainscope hook.

Installed once per process (``start()``), right after ``import torch``:

- global optimizer step pre/post hooks (``torch.optim.optimizer``): the first step makes the
  hook from the JSON configuration (TRAINSCOPE_CONFIG), finds the models (``_discover``) and
  registers them; every step saves the gradients the optimizer is about to apply (on saving
  steps only: after gradient accumulation, after GradScaler's unscaling) and counts toward the
  end of the training step;
- ``torch.autograd.backward`` is wrapped to see the loss (``Tensor.backward`` calls it; and
  ``GradScaler.scale`` to see the loss before scaling);
- a forward pre-hook on each model found tells training forward passes from evaluation ones.

Without torch.optim (parameters updated by hand, ``p.data.add_(p.grad, alpha=-lr)``, as
pytorch/examples' word language model does by default): at the first backward() after which
the parameters it reaches have changed, with no optimizer alive in the process, the hook is made
there, the models are the modules owning those parameters (its autograd graph's leaves), the
gradients are saved when each backward() returns, and a training step ends at each backward().
A script that computes gradients without changing its parameters is not a training.

Step boundaries. A training step ends when every optimizer of the training has stepped once
(learnt: at first every optimizer alive at the first step; an optimizer stepping twice before
that shows the real set). The next step starts lazily, at the next sign of training (a training
forward pass of a model, a backward, an optimizer step), so evaluation in between is not
counted as training and a training that ends leaves no empty step. An evaluation forward pass
(model in eval(), inference_mode(), or no_grad() when there is a single model) between two
training steps switches the hook to EVAL, and each one is an EVAL step, as with a hook written
by hand. The first step, whose forward and backward ran before the model was known, holds the
initial weights, the gradients of the first update and (without loss modules) the losses
seen before it.

Cost: on a step that saves nothing ("quiet"), the callbacks are C functions of trainscope._core
(auto_forward_pre_hook, auto_optimizer_pre_hook, auto_optimizer_post_hook, auto_backward) that
test the session's attributes, make the step boundary and return, calling the Python ones below
for anything else (the same as a hook written by hand, plus an optimizer hook pair and a
function call); the garbage-collector scan runs once per new optimizer.
Nothing here ever breaks the training: the first error is printed, and the session stands down
when it cannot work at all (no configuration, the script makes its own hook).
"""

import sys
import types
import weakref

import torch
from torch.optim import optimizer as _optim

from .. import modes as _modes
from .._closures import closure_of, with_closure
from .. import _pre_call
from . import _discover

_session = None


def current():
    """This process's AutoSession, or None."""
    return _session


def start():
    """Installs the session (idempotent) and returns it."""
    global _session
    if _session is None:
        _session = AutoSession()
        _session.install()
    return _session


def _no_gradient_hook(grad):
    return None


_hook_cls = None


def _hook_class():
    """trainscope.pytorch.Hook without gradient tensor hooks: the automatic mode saves
    gradients at the optimizer step instead (one value per step, the one applied)."""
    global _hook_cls
    if _hook_cls is None:
        from ..pytorch.hook import Hook, _unwrap

        class AutoHook(Hook):
            # Made inside an optimizer step pre-hook, where PyTorch forbids adding another: the
            # session hands the hook each step's closure (AutoSession._with_closure).
            _WATCH_CLOSURES = False
            # The session makes the step boundaries (its own forward pre-hook on each model).
            _STEP_PRE_HOOK = False

            def _grad_hook(self, gname):
                return _no_gradient_hook

            def register_module(self, module):
                # A script that asks get_hook() for the hook and registers its model, after
                # the automatic mode did, is not an error: the model is registered.
                if isinstance(module, torch.nn.Module):
                    top = _unwrap(module)[0]
                    if any(top is t for t in self._top_modules):
                        return
                super().register_module(module)
                for h in [h for h in self._handles if _is_gradient_handle(h)]:
                    h.remove()
                    self._handles.remove(h)

            register_hook = register_module

        _hook_cls = AutoHook
    return _hook_cls


def _is_gradient_handle(handle):
    try:
        hooks = handle.hooks_dict_ref()
        return hooks is not None and hooks.get(handle.id) is _no_gradient_hook
    except Exception:
        return False


class AutoSession:
    """The automatic mode of one process. Thread-safety: PyTorch calls its callbacks on the
    training thread; the state is not locked (one training loop per process)."""

    MAX_EARLY_LOSSES = 16

    def __init__(self):
        self.hook = None
        self.off = False
        self.roots = []
        self._handles = []
        self._originals = {}
        self._forward_pre = self._root_forward_pre  # the models' forward pre-hook (install)
        self._early_losses = []
        self._known = {}  # id() -> weakref of each optimizer seen (a WeakSet test allocates)
        self._guess = set()  # id() of the optimizers alive at the first step
        self._cycle = None  # id() of the optimizers of one training step, once known
        self._stepped = set()
        self._pending = False
        self._pre_calls = []  # _pre_call.Handle in front of a model's call
        self._eval = False
        self._grad_names = {}  # id(parameter) -> its gradient's tensor name (made once)
        self._loss_modules = weakref.WeakSet()
        self._loss_outputs = {}  # id(tensor) -> weakref, outputs of loss modules this step
        self._loss_nodes = {}  # id(grad_fn) -> grad_fn of those outputs, this step
        self._scaled = {}  # id(scaled loss) -> (weakref, unscaled loss)
        self._said = False
        self._backwards = 0  # backward() calls before the hook was made
        self._fingerprint = None  # without an optimizer: [(weakref(param), values)] at the first
        self._manual = None  # without an optimizer: [(gradient name, parameter)] once made

    # ---- installation ------------------------------------------------------------------------

    def install(self):
        gates = self._gates()
        self._forward_pre = gates["forward_pre"]
        self._handles.append(_optim.register_optimizer_step_pre_hook(gates["optimizer_pre"]))
        self._handles.append(_optim.register_optimizer_step_post_hook(gates["optimizer_post"]))
        self._wrap(torch.autograd, "backward", gates["backward"])
        scaler = getattr(getattr(torch, "amp", None), "GradScaler", None)
        if scaler is not None:
            self._wrap(scaler, "scale", self._scale_wrapper)

    def _gates(self):
        """The callbacks PyTorch calls: trainscope._core's C functions for the quiet steps
        (auto_gate.cc), each calling the Python one here for the others; the Python ones alone
        if the C module cannot be loaded. {"forward_pre", "optimizer_pre", "optimizer_post":
        callbacks, "backward": make(original) -> wrapper}."""
        try:
            from .. import _core

            def backward(original):
                return _core.auto_backward(self, original,
                                           self._autograd_backward_wrapper(original))

            return {
                "forward_pre": _core.auto_forward_pre_hook(
                    self, self._root_forward_pre, self._after_gate, torch.is_grad_enabled,
                    torch.is_inference_mode_enabled),
                "optimizer_pre": _core.auto_optimizer_pre_hook(self, self._optimizer_pre),
                "optimizer_post": _core.auto_optimizer_post_hook(self, self._optimizer_post),
                "backward": backward}
        except Exception:  # an old or missing extension: the same, in Python
            return {"forward_pre": self._root_forward_pre, "optimizer_pre": self._optimizer_pre,
                    "optimizer_post": self._optimizer_post,
                    "backward": self._autograd_backward_wrapper}

    def _wrap(self, owner, name, make):
        original = getattr(owner, name)
        wrapper = make(original)
        if not isinstance(wrapper, types.BuiltinFunctionType):  # a C function has its own
            wrapper.__wrapped__ = original
            wrapper.__name__ = getattr(original, "__name__", name)
            wrapper.__doc__ = getattr(original, "__doc__", None)
        setattr(owner, name, wrapper)
        self._originals[(owner, name)] = (original, wrapper)

    def stand_down(self, why=None, in_optimizer_hook=False):
        """Removes every callback and wrapper; the hook (if any) is left to close at exit.
        `in_optimizer_hook`: called from inside an optimizer step hook. PyTorch iterates its
        global optimizer hooks while it calls them, so removing one there raises "OrderedDict
        mutated during iteration" in the training; those two stay registered and return at once
        (self.off)."""
        if why:
            self._say(why)
        self.off = True
        if not in_optimizer_hook:
            for h in self._handles:
                h.remove()
            self._handles.clear()
        for (owner, name), (original, wrapper) in self._originals.items():
            if getattr(owner, name, None) is wrapper:
                setattr(owner, name, original)
        self._originals.clear()

    def _say(self, text):
        print(f"trainscope: automatic mode: {text}", file=sys.stderr, flush=True)

    def _fail(self, e, where):
        if self.hook is not None:
            self.hook._report(f"(automatic mode: {where})", e)
        elif not self._said:
            self._said = True
            self._say(f"{where}: {type(e).__name__}: {e}")

    # ---- wrappers ----------------------------------------------------------------------------

    def _autograd_backward_wrapper(self, original):
        session = self

        def backward(tensors, *args, **kwargs):
            hook = session.hook
            if session.off or (hook is not None and not hook._saving and not session._pending
                               and not session._eval and session._manual is None):
                return original(tensors, *args, **kwargs)  # a quiet step (see "Quiet" below)
            session._on_backward(
                (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors))
            result = original(tensors, *args, **kwargs)
            if session._manual is not None:
                session._after_backward()
            return result

        return backward

    def _scale_wrapper(self, original):
        session = self

        def scale(self, outputs):
            scaled = original(self, outputs)
            if (session.hook is not None and session.hook._saving
                    and isinstance(outputs, torch.Tensor) and isinstance(scaled, torch.Tensor)):
                session._scaled[id(scaled)] = (weakref.ref(scaled), outputs.detach())
            elif session.hook is None and isinstance(scaled, torch.Tensor):
                session._scaled = {id(scaled): (weakref.ref(scaled), outputs.detach())}
            return scaled

        return scale

    # ---- callbacks ---------------------------------------------------------------------------

    # "Quiet": a sign of training with nothing to do (the hook is made, the step in progress
    # saves nothing, no step boundary is pending, the mode is TRAIN, no training without an
    # optimizer is captured). The C callbacks (_gates) handle it and call these for the rest;
    # these test it again (they are the callbacks themselves without the C module).

    def _on_backward(self, tensors):
        try:
            hook = self.hook
            first_manual = False
            if hook is None:
                self._backwards += 1
                if self._backwards <= self.MAX_MANUAL_CHECKS and self._setup_manual(tensors):
                    hook, first_manual = self.hook, True
                else:
                    if len(self._early_losses) < self.MAX_EARLY_LOSSES:
                        self._early_losses.extend(self._losses_of(tensors))
                    return
            self._train_activity()
            # The first manual step: its loss module's forward ran before it was hooked, so with
            # loss modules it has no loss rather than a name the later steps do not use.
            if hook._saving and not (first_manual and self._loss_modules):
                self._save_losses(self._losses_of(tensors))
        except Exception as e:
            self._fail(e, "backward")

    def _after_backward(self):
        """Without an optimizer: the gradients backward() left, on saving steps; the step
        ends (the next sign of training starts the next one)."""
        if self.off or self.hook is None:
            return
        try:
            if self.hook._saving:
                self._save_grads(self._manual)
            self._pending = True
        except Exception as e:
            self._fail(e, "backward")

    def _losses_of(self, tensors):
        out = []
        for t in tensors:
            if not isinstance(t, torch.Tensor) or t.numel() != 1:
                continue
            ref = self._loss_outputs.get(id(t))
            node = self._loss_node_of(t)
            if node is not None:
                # Its backward() begins: holding the node past it would keep the memory of the
                # whole forward pass (an LBFGS step of time_sequence_prediction grew by 245 MB
                # at each of its 20 closure evaluations).
                del self._loss_nodes[id(node)]
            if ref is not None and ref() is t or node is not None:
                continue  # a loss module's output: saved under its class name already
            scaled = self._scaled.get(id(t))
            if scaled is not None and scaled[0]() is t:
                t = scaled[1]
            out.append(t.detach())
        return out

    def _save_losses(self, losses):
        for t in losses:
            self.hook.record_tensor_value(self.hook._names.default_loss, t)

    def _loss_forward(self, module, inputs, output):
        if self.hook is not None and self.hook._saving and isinstance(output, torch.Tensor):
            self._loss_outputs[id(output)] = weakref.ref(output)
            if output.grad_fn is not None:
                self._loss_nodes[id(output.grad_fn)] = output.grad_fn

    MAX_LOSS_HOPS = 4

    def _loss_node_of(self, t):
        """The autograd node of a loss module's output that `t` is, or that `t` comes from
        through a few one-input operations (Lightning's closure divides the loss by the
        accumulation count before backward(); a user scales it for accumulation): the loss
        module's output stands for it. None otherwise."""
        nodes, node = self._loss_nodes, t.grad_fn
        for _ in range(self.MAX_LOSS_HOPS):
            if node is None or not nodes:
                return None
            if nodes.get(id(node)) is node:
                return node
            inputs = [n for n, _ in node.next_functions if n is not None]
            if len(inputs) != 1:
                return None
            node = inputs[0]
        return None

    def _optimizer_pre(self, optimizer, args, kwargs):
        if self.off:
            return None
        hook = self.hook
        if (hook is not None and not hook._saving and not self._pending and not self._eval
                and self._manual is None):  # a quiet step (see "Quiet")
            key = id(optimizer)
            known = self._known.get(key)
            if known is not None and known() is optimizer and key not in self._stepped:
                return None  # a known optimizer's step in a step that saves nothing
        try:
            if self.hook is None:
                if not self._setup(optimizer):
                    return None
            else:
                known = self._known.get(id(optimizer))
                if known is None or known() is not optimizer:
                    self._add_optimizer(optimizer)
                if id(optimizer) in self._stepped:
                    # It steps again before the others: the training step is what stepped so far.
                    self._cycle = set(self._stepped)
                    self._stepped.clear()
                    self._pending = True
                self._train_activity()
            if self.hook._saving:
                closure, where = closure_of(args, kwargs)
                if closure is None:
                    self._save_gradients(optimizer)
                else:
                    # The closure (Lightning's, LBFGS's) runs forward and backward inside the
                    # step: the gradients applied exist once it has run.
                    return self._with_closure(optimizer, closure, where, args, kwargs)
        except Exception as e:
            self._fail(e, "optimizer step")
        return None

    def _with_closure(self, optimizer, closure, where, args, kwargs):
        """(args, kwargs) for the step with `closure` wrapped to save the gradients after its
        first call (LBFGS calls it again: the first gradient is the one the step starts from),
        each call being one evaluation in the step's closure record (the hook's
        ClosureRecorder: index meta.closure_evaluations)."""
        session, done = self, []
        hook = self.hook
        evaluate = hook._closures.wrap(hook, optimizer, closure)

        def closure_then_save(*a, **k):
            result = evaluate(*a, **k)
            if not done:
                done.append(True)
                try:
                    if session.hook._saving and not session.off:
                        session._save_gradients(optimizer)
                except Exception as e:
                    session._fail(e, "optimizer step")
            return result

        return with_closure(args, kwargs, where, closure_then_save)

    def _optimizer_post(self, optimizer, args, kwargs):
        if self.off or self.hook is None:
            return
        self._stepped.add(id(optimizer))
        cycle = self._cycle if self._cycle is not None else self._guess
        if cycle <= self._stepped:
            if self._cycle is None:
                self._cycle = set(self._stepped)
            self._stepped.clear()
            self._pending = True

    def _root_forward_pre(self, module, args):
        if self.off or self.hook is None:
            return
        try:
            evaluating = (not module.training or torch.is_inference_mode_enabled()
                          or (len(self.roots) == 1 and not torch.is_grad_enabled()))
            if not evaluating:
                if self._pending and not self._eval:
                    # A training step begins (its usual case, on the hook's fast path, is the C
                    # forward pre-hook's: _gates)
                    self._boundary(module)
                elif self._eval:
                    self._train_activity(module)
                else:  # a forward pass inside a training step (a rollout's: index model_calls)
                    self.hook._c.count_model_call()
            elif self._eval:
                self._boundary(module)
            elif self._pending:
                self.hook.set_mode(_modes.ModeKeys.EVAL)
                self._eval = True
                self._boundary(module)
            else:  # a forward pass inside a training step (e.g. a GAN's no_grad generator pass)
                self.hook._c.count_model_call()
        except Exception as e:
            self._fail(e, "forward")

    def _after_gate(self, module, flags):
        """The C forward pre-hook made a training step's boundary with the hook's fast path
        and got `flags` (not 0: the step saves, records phases or was stopped), or -1: the
        boundary failed, and the Python one makes it again (and reports what goes wrong)."""
        try:
            if flags < 0:
                self.hook._set_fast(False)
                self._boundary(module)
            else:
                self.hook._boundary(module, flags)
        except Exception as e:
            self._fail(e, "forward")

    # ---- steps -------------------------------------------------------------------------------

    def _train_activity(self, module=None):
        if self._pending and module is None:
            # A training step whose forward made no boundary: a model compiled since it was
            # hooked has lost the one in front of its call; a forward pre-hook makes it from the
            # next step on (this step's boundary comes here, after its forward).
            self._pre_calls = _pre_call.check_all(self._pre_calls)
        if self._eval:
            self.hook.set_mode(_modes.ModeKeys.TRAIN)
            self._eval = False
            self._boundary(module)
        elif self._pending:
            self._boundary(module)

    def _boundary(self, module=None):
        """A step boundary. `module`: the model whose forward pre-hook makes it (its forward
        has begun: the profiler takes its start there when the new step records phases)."""
        self._pending = False
        if self._loss_outputs:
            self._loss_outputs.clear()
            self._loss_nodes.clear()
        if self._scaled:
            self._scaled.clear()
        hook = self.hook
        # TrainingStopped (a stop action) goes through, on purpose
        if hook._explicit_steps:
            hook._boundary(module)
        else:
            hook._explicit_step()
        if module is not None:  # the model's call that begins the step is its first
            hook._c.count_model_call()

    def _save_gradients(self, optimizer):
        names = self._grad_names
        self._save_grads((names.get(id(p)), p) for group in optimizer.param_groups
                         for p in group["params"])

    def _save_grads(self, named_params):
        """Saves the .grad of each (gradient name, parameter); a None name is not registered."""
        hook, cpu = self.hook, []
        for name, p in named_params:
            g = getattr(p, "grad", None)
            if g is None or name is None or g.is_sparse:
                continue
            if g.is_cpu:
                cpu.append((name, g))
            else:
                hook._save(name, g)
        if cpu:
            hook._c.save_many(cpu)

    # ---- discovery ---------------------------------------------------------------------------

    def _setup(self, optimizer):
        """At the first optimizer step: the hook, the models, the first step. False if the
        session stood down."""
        if not self._make_hook(in_optimizer_hook=True):
            return False
        # One scan of the live objects for the optimizers, the models and the loss modules.
        live = _discover.live_objects((torch.optim.Optimizer, torch.nn.Module))
        self._guess = {id(o) for o in _discover.stepping_optimizers(
            _discover.of_kind(live, torch.optim.Optimizer))}
        self._add_optimizer(optimizer, _discover.of_kind(live, torch.nn.Module))
        if not self.roots:
            self._say("no module owns the parameters the optimizer steps: only losses are saved")
        self.hook.set_mode(_modes.ModeKeys.TRAIN)
        self._boundary()
        if self.hook._saving and self._early_losses and not self._loss_modules:
            # Without loss modules the losses are loss_output_<i> from step 0 on; with them, the
            # first step has none rather than names the later steps do not use.
            self._save_losses(self._early_losses)
        self._early_losses = []
        return True

    MAX_MANUAL_CHECKS = 16  # backward() calls watched for parameters updated by hand
    FINGERPRINT_PARAMS, FINGERPRINT_VALUES = 8, 64

    def _setup_manual(self, tensors):
        """Watches the first backward() calls of a process with no optimizer alive: once the
        parameters they reach have changed between two of them (updated by hand, as a training
        without torch.optim does; a script that only computes gradients, for a saliency map,
        leaves them as they are and is never captured), makes the hook, registers the models
        owning those parameters and starts the first step. False until then, for good once an
        optimizer exists (its first step sets up, as usual), or if the session stood down."""
        if self._backwards == 1:
            params = _discover.graph_parameters(tensors)
            self._fingerprint = [(weakref.ref(p), self._values(p))
                                 for p in params[:self.FINGERPRINT_PARAMS]]
            return False
        if self._backwards == 2 and _discover.live_objects(torch.optim.Optimizer):
            self._backwards = self.MAX_MANUAL_CHECKS  # an optimizer steps this training
            self._fingerprint = None
            return False
        if not self._fingerprint or not self._params_changed():
            return False
        self._fingerprint = None
        params = _discover.graph_parameters(tensors)
        if not params or not self._make_hook(in_optimizer_hook=False):
            return False
        self._add_params(params)
        self._manual = [(self._grad_names.get(id(p)), p) for p in params]
        names = ", ".join(type(r).__name__ for r in self.roots) or "none"
        self._say(f"no torch.optim optimizer: capturing the modules whose parameters backward() "
                  f"reaches ({names}); each backward() is a training step")
        self.hook.set_mode(_modes.ModeKeys.TRAIN)
        self._boundary()
        self._early_losses = []
        return True

    def _values(self, p):
        return p.detach().reshape(-1)[:self.FINGERPRINT_VALUES].clone()

    def _params_changed(self):
        for ref, values in self._fingerprint:
            p = ref()
            if p is not None and not torch.equal(self._values(p), values):
                return True
        return False

    def _make_hook(self, in_optimizer_hook):
        """Makes the hook from the configuration, unless the script is in charge of capture.
        False if the session stood down."""
        # Before this module imports it: the script imported trainscope.pytorch (or
        # smdebug.pytorch through the alias) itself, so it uses the explicit API and its own hook
        # is in charge, whenever it makes it. A script that trains a while before it makes its
        # hook (a warm-up or a pre-training, then the hooked fine-tune) would otherwise get two
        # hooks writing the same steps of one trial.
        explicit = "trainscope.pytorch" in sys.modules
        from ..pytorch import singleton

        if singleton.get_hook() is not None:
            # the script made its own hook: it is in charge
            self.stand_down(in_optimizer_hook=in_optimizer_hook)
            return False
        if explicit:
            self.stand_down("off: the script imports trainscope.pytorch (or smdebug.pytorch), "
                            "so its own hook is in charge of capture",
                            in_optimizer_hook=in_optimizer_hook)
            return False
        try:
            hook = _hook_class().create_from_json_file()
        except FileNotFoundError as e:
            self.stand_down(f"off: {e}", in_optimizer_hook=in_optimizer_hook)
            return False
        except Exception as e:
            self.stand_down(f"off: the hook configuration cannot be used: {e}",
                            in_optimizer_hook=in_optimizer_hook)
            return False
        self.hook = hook
        return True

    def _add_optimizer(self, optimizer, modules=None):
        self._known[id(optimizer)] = weakref.ref(optimizer)
        self._add_params(_discover.optimizer_params(optimizer), modules)

    def _add_params(self, params, modules=None):
        """Registers the models owning `params` (not yet registered) and the loss modules.
        `modules`: the live modules (one scan of them is made when None)."""
        if modules is None:
            modules = _discover.live_objects(torch.nn.Module)
        for root in _discover.find_roots(params, exclude_ids=self._grad_names.keys(),
                                         modules=modules):
            self._register_root(root)
        for loss in _discover.of_kind(modules, torch.nn.modules.loss._Loss):
            if loss not in self._loss_modules:
                self._loss_modules.add(loss)
                try:
                    self.hook.register_loss(loss)
                    # only saving steps need it (_loss_forward returns at once on the others)
                    self.hook._add_saving_forward_hook(loss, self._loss_forward)
                except Exception as e:
                    self._fail(e, f"loss module {type(loss).__name__}")

    def _register_root(self, root):
        hook = self.hook
        before = len(hook._params)
        try:
            hook.register_module(root)
        except Exception as e:
            self._fail(e, f"module {type(root).__name__}")
            return
        for name, p in hook._params[before:]:
            self._grad_names[id(p)] = hook._names.gradient(name)
        self.roots.append(root)
        # In front of the model's call (trainscope/_pre_call.py: no PyTorch slow call path). A
        # model compiled after this (module.compile()) loses it: the next backward makes that
        # step's boundary (_train_activity) and moves it to a forward pre-hook.
        handle = _pre_call.attach(root, self._forward_pre)
        if handle.in_front:
            self._pre_calls.append(handle)
