"""Finding a training's models, loss modules and optimizers without being told.

Python keeps no registry of modules, so the live ones are found through the garbage collector's
list of objects (``gc.get_objects``: tens of milliseconds in a large process, a few hundred
thousand objects once torch is imported), in one scan at the first optimizer step (the
optimizers, the models and the loss modules together), never again unless a new optimizer
appears.

The model of an optimizer is the top-level module that owns its parameters: among the modules
holding any of them, those that are no other such module's submodule (so ``Net``, not its
``fc1``; ``DistributedDataParallel``/``torch.compile`` wrappers count as the model, and the hook
looks through them). Containers without a forward (``ModuleList``, ``ModuleDict``, a plain
``nn.Module`` used as a bag) are not models: their children are. Modules made by torch itself
(FX graph modules of a compiled model, which hold the model's own submodules) are taken only for
parameters no user module owns. Every parameter is covered once: a second root over the same
parameters is dropped.
"""

import gc
import itertools

import torch


def _has_forward(module):
    # torch.compile's wrapper sets its forward on the instance.
    return type(module).forward is not torch.nn.Module.forward or "forward" in module.__dict__


def _is_torch_made(module):
    return isinstance(module, torch.fx.GraphModule)


class _IsKind(dict):
    """type -> whether it is a subclass of `kind`, each type asked once."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def __missing__(self, t):
        self[t] = found = issubclass(t, self.kind)
        return found


def live_objects(kind):
    """Every live object that is an instance of `kind` (a type or tuple of types). By type():
    isinstance() would ask weak proxies (dead ones raise) and lazy objects for __class__. The
    scan runs in C (_core.instances_of; in Python, each type asked once, without it)."""
    objects = gc.get_objects()
    try:
        from .. import _core

        return _core.instances_of(objects, kind)
    except (ImportError, AttributeError):
        return list(itertools.compress(objects, map(_IsKind(kind).__getitem__, map(type, objects))))


def of_kind(objects, kind):
    """The objects of `objects` (from live_objects) that are instances of `kind`, by type()."""
    return [o for o in objects if issubclass(type(o), kind)]


def stepping_optimizers(optimizers):
    """`optimizers` less the wrappers around another of them (accelerate's AcceleratedOptimizer,
    which Hugging Face's Trainer steps, holds the real optimizer in an attribute and is an
    Optimizer that skips Optimizer.__init__): a wrapper steps through the optimizer it holds,
    which is the one PyTorch's global optimizer hooks see step. Waiting for the wrapper to step
    as well would merge two training steps into one."""
    ids = {id(o) for o in optimizers}
    wrappers = set()
    for o in optimizers:
        for value in getattr(o, "__dict__", {}).values():
            if value is not o and id(value) in ids:
                wrappers.add(id(o))
                break
    return [o for o in optimizers if id(o) not in wrappers]


def optimizer_params(optimizer):
    """The parameters `optimizer` steps, in its order, each once."""
    seen, out = set(), []
    for group in optimizer.param_groups:
        for p in group["params"]:
            if isinstance(p, torch.Tensor) and id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def graph_parameters(tensors, max_nodes=200000):
    """The parameters (leaf tensors that require a gradient) that backward() from `tensors`
    reaches, in the order the graph walk meets them, each once: the AccumulateGrad nodes of
    their autograd graph. At most `max_nodes` nodes are visited."""
    seen, out, found = set(), [], set()
    stack = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    while stack and len(seen) < max_nodes:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if isinstance(var, torch.Tensor):
            if id(var) not in found:
                found.add(id(var))
                out.append(var)
            continue
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return out


def _descend(module, wanted):
    """`module`, or for a container without a forward its children that hold `wanted`."""
    if _has_forward(module):
        return [module]
    out = []
    for child in module.children():
        if any(id(p) in wanted for p in child.parameters()):
            out.extend(_descend(child, wanted))
    return out or [module]


def find_roots(params, exclude_ids=(), modules=None):
    """The top-level modules owning `params` (see the module docstring), best first.
    `exclude_ids`: id() of parameters already covered by roots found earlier; `modules`: the
    live modules (live_objects(torch.nn.Module)), found here when None."""
    wanted = {id(p) for p in params} - set(exclude_ids)
    if not wanted:
        return []
    candidates = []
    for m in live_objects(torch.nn.Module) if modules is None else modules:
        n = sum(1 for p in m.parameters() if id(p) in wanted)
        if n:
            candidates.append((m, n))
    inner = set()
    for m, _ in candidates:
        for sub in m.modules():
            if sub is not m:
                inner.add(id(sub))
    tops = [(m, n) for m, n in candidates if id(m) not in inner]
    # User modules first, then the ones covering most parameters.
    tops.sort(key=lambda mn: (_is_torch_made(mn[0]), -mn[1]))
    roots, covered = [], set()
    for m, _ in tops:
        for r in _descend(m, wanted - covered):
            ids = {id(p) for p in r.parameters()} & wanted
            if ids - covered and not ids & covered:
                roots.append(r)
                covered |= ids
    return roots
