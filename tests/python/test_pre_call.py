"""The step boundary in front of a registered model's call (trainscope/_pre_call.py,
python/src/pre_call.cc): the same calls, arguments, results and steps as a forward pre-hook, off
PyTorch's slow call path, with a forward pre-hook wherever it could not be the same."""

import copy
import pickle

import pytest
import torch
from torch import nn

import trainscope.pytorch as ts
from trainscope.exceptions import TrainingStopped
from trainscope import _pre_call


class Adder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x, y=None, *, scale=1.0):
        out = self.lin(x) * scale
        return out if y is None else out + y


def test_the_prehook_runs_before_the_modules_own_hooks_with_the_call_arguments():
    m = Adder()
    calls = []
    m.register_forward_pre_hook(lambda mod, args: calls.append(("own pre", mod, len(args))))
    m.register_forward_hook(lambda mod, args, out: calls.append(("own post", mod, out.shape)))
    h = _pre_call.attach(m, lambda mod, args: calls.append(("ours", mod, args)))
    assert h.in_front and _pre_call.in_front(m) and not _pre_call.in_front(m.lin)
    x, y = torch.ones(4, 3), torch.full((4, 2), 10.0)
    torch.manual_seed(0)
    out = m(x, y, scale=2.0)  # positional and keyword arguments are passed on as they came
    assert torch.equal(out, m.lin(x) * 2.0 + y)
    assert [c[0] for c in calls] == ["ours", "own pre", "own post"]
    assert calls[0][1] is m and len(calls[0][2]) == 2 and calls[0][2][0] is x
    assert calls[1][2] == 2 and calls[2][2] == (4, 2)
    h.remove()
    assert not _pre_call.in_front(m) and m._compiled_call_impl is None
    calls.clear()
    m(x)
    assert [c[0] for c in calls] == ["own pre", "own post"]


def test_a_prehook_that_returns_inputs_replaces_them_as_pytorchs_rule_says():
    m = Adder()
    x = torch.ones(2, 3)
    h = _pre_call.attach(m, lambda mod, args: (args[0] * 0,))
    assert torch.equal(m(x), m.lin(torch.zeros(2, 3)))
    h.remove()
    h = _pre_call.attach(m, lambda mod, args: args[0] * 0)  # not a tuple: the one argument
    assert torch.equal(m(x, scale=3.0), m.lin(torch.zeros(2, 3)) * 3.0)
    h.remove()


def test_an_exception_of_the_prehook_reaches_the_caller_and_forward_does_not_run():
    m = Adder()
    ran = []
    m.register_forward_hook(lambda *a: ran.append(1))

    def stop(mod, args):
        raise TrainingStopped("a rule asked")

    _pre_call.attach(m, stop)
    with pytest.raises(TrainingStopped, match="a rule asked"):
        m(torch.ones(1, 3))
    assert ran == []


def test_it_falls_back_to_a_forward_pre_hook_where_it_would_not_be_the_same():
    class OwnCall(nn.Linear):
        def __call__(self, *args, **kwargs):
            return super().__call__(*args, **kwargs)

    seen = []
    compiled = nn.Linear(3, 2)
    compiled.compile(backend="eager")
    for m in (OwnCall(3, 2), compiled):
        h = _pre_call.attach(m, lambda mod, args: seen.append(mod))
        assert not h.in_front and len(m._forward_pre_hooks) == 1
        m(torch.ones(1, 3))
        assert seen[-1] is m
        h.remove()
        assert not m._forward_pre_hooks
    assert compiled._compiled_call_impl is not None  # the user's compilation is left alone


def _hook(tmp_path, name="t"):
    return ts.Hook(out_dir=str(tmp_path / name), save_config=ts.SaveConfig(save_interval=2),
                   include_collections=["weights", "gradients", "losses"], quiet=True)


def _train(model, hook, steps, compile_at=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    hook.register_loss(loss_fn)
    torch.manual_seed(1)
    for i in range(steps):
        if i == compile_at:
            model.compile(backend="eager")
        opt.zero_grad()
        loss = loss_fn(model(torch.randn(8, 4)), torch.randn(8, 2))
        loss.backward()
        opt.step()


def test_a_hooked_sequential_takes_no_pre_hook_and_counts_every_call_as_a_step(tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    hook = _hook(tmp_path)
    hook.register_module(model)
    assert not any(m._forward_pre_hooks for m in model.modules())
    assert _pre_call.in_front(model)
    _train(model, hook, 6)
    hook.close()
    trial = ts.create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 2, 4]
    assert trial.tensor("gradient/Sequential_0.weight").steps() == [0, 2, 4]
    assert trial.tensor("MSELoss_output_0").steps() == [0, 2, 4]


def test_copies_of_a_hooked_model_are_not_hooked_and_make_no_steps(tmp_path):
    model = Adder()
    hook = _hook(tmp_path)
    hook.register_module(model)
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert twin._compiled_call_impl is None and not twin._forward_pre_hooks
        before = hook._c.step_number
        twin(torch.ones(1, 3))
        assert hook._c.step_number == before
    model(torch.ones(1, 3))
    assert _pre_call.in_front(model)
    hook.close()


def test_a_model_compiled_after_registering_keeps_its_steps_on_a_forward_pre_hook(tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    hook = _hook(tmp_path)
    hook.register_module(model)
    _train(model, hook, 8, compile_at=3)  # module.compile() replaces the call: noticed, moved
    assert not _pre_call.in_front(model) and len(model._forward_pre_hooks) == 1
    hook.close()
    trial = ts.create_trial(str(tmp_path / "t"))
    # Step 3's forward ran compiled before the optimizer's pre-hook noticed: it made no
    # boundary, so steps 3 and 4 are one (7 steps, not 8; never a lost tensor).
    assert trial.steps() == [0, 2, 4, 6]
    assert trial.tensor("MSELoss_output_0").steps() == [0, 2, 4, 6]


def test_a_module_whose_class_is_swapped_for_one_with_its_own_call_moves_to_a_pre_hook():
    # As a wrapper that swaps the module's class (FSDP2's fully_shard) could: the function in
    # front of the call would no longer be called, or would skip the new class's _call_impl.
    class Wrapped(nn.Linear):
        def _call_impl(self, *args, **kwargs):
            self.wrapped_calls = getattr(self, "wrapped_calls", 0) + 1
            return super()._call_impl(*args, **kwargs)

        __call__ = _call_impl

    m = nn.Linear(3, 2)
    seen = []
    h = _pre_call.attach(m, lambda mod, args: seen.append(mod))
    assert h.check() and h.in_front
    m.__class__ = Wrapped
    assert not h.check() and not h.in_front
    assert m._compiled_call_impl is None and len(m._forward_pre_hooks) == 1
    m(torch.ones(1, 3))
    assert seen == [m] and m.wrapped_calls == 1  # once: by its forward pre-hook now


def test_until_the_check_a_swapped_class_with_its_own_call_impl_still_gets_it_called():
    class OwnImpl(nn.Linear):
        def _call_impl(self, *args, **kwargs):
            self.own_calls = getattr(self, "own_calls", 0) + 1
            return super()._call_impl(*args, **kwargs)

    m = nn.Linear(3, 2)
    seen = []
    h = _pre_call.attach(m, lambda mod, args: seen.append(mod))
    m.__class__ = OwnImpl
    m(torch.ones(1, 3))  # the function in front calls the class's _call_impl, not nn.Module's
    assert seen == [m] and m.own_calls == 1
    assert not h.check()
    m(torch.ones(1, 3))
    assert seen == [m, m] and m.own_calls == 2  # by its forward pre-hook now, once


class _Owner:
    def __init__(self):
        self.on = False
        self.calls = []
        self.handles = []

    def fn(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "ran"


def test_call_if_calls_the_callback_only_while_the_attribute_is_true():
    owner = _Owner()
    gate = _pre_call.gate(owner, "on", owner.fn)
    assert gate is not owner.fn  # a C function in front of it
    assert gate(1, k=2) is None and owner.calls == []
    owner.on = {"opt": 1}  # any true value: a non-empty dict, as the profiler's _opt_t0
    assert gate(1, k=2) == "ran" and owner.calls == [((1,), {"k": 2})]
    owner.on = {}
    assert gate(3) is None and len(owner.calls) == 1
    del owner.on  # cannot be told: the callback decides (fail open)
    assert gate(4) == "ran" and owner.calls[-1] == ((4,), {})


def test_step_gate_calls_the_callback_when_a_function_in_front_did_not_run_since_its_last_call():
    owner = _Owner()
    a, b = Adder(), Adder()
    owner.handles = [_pre_call.attach(a, lambda m, args: None),
                     _pre_call.attach(b, lambda m, args: None)]
    assert all(h.in_front for h in owner.handles)
    gate = _pre_call.gate(owner, "on", owner.fn, handles="handles")
    x = torch.ones(1, 3)
    a(x), b(x)
    assert gate("step") is None and owner.calls == []  # both ran, the attribute is false
    a(x)  # b not called in this step: the callback looks at the handles
    assert gate("step") == "ran" and len(owner.calls) == 1
    a(x), b(x)
    assert gate("step") is None and len(owner.calls) == 1
    a(x), b(x)
    owner.on = True
    assert gate("step") == "ran" and len(owner.calls) == 2
    owner.on = False
    a.compile(backend="eager")  # the call replaced: the function in front no longer runs
    a(x), b(x)
    assert gate("step") == "ran" and len(owner.calls) == 3
    owner.handles = [h for h in owner.handles if h.check() and h.in_front]  # the hook's check
    assert len(owner.handles) == 1 and len(a._forward_pre_hooks) == 1
    b(x)
    assert gate("step") is None and len(owner.calls) == 3
    owner.handles = ["not a handle"]  # cannot be told: the callback decides
    assert gate("step") == "ran"

