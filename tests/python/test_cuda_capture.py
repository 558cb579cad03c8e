"""The hook on CUDA tensors: statistics computed on the device and moved to the host in one
transfer per step, raw values copied asynchronously through pinned memory, and no device
synchronisation at all on a step where nothing is saved.

Runs only where PyTorch sees a GPU (skipped elsewhere; the CPU paths have their own tests).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import trainscope  # noqa: E402
import trainscope.pytorch as ts  # noqa: E402

RED = ["min", "max", "mean", "std"]


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
    ).cuda()


def _hook(out, interval, raw, collections=("weights", "gradients", "losses")):
    return ts.Hook(
        out_dir=str(out),
        save_config=ts.SaveConfig(save_interval=interval),
        include_collections=list(collections),
        reduction_config=ts.ReductionConfig(reductions=RED, norms=["l2"], save_raw_tensor=raw),
    )


def _train(hook, model, steps, on_step=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(loss_fn)
    g = torch.Generator(device="cuda").manual_seed(1)
    for step in range(steps):
        x = torch.randn(16, 32, device="cuda", generator=g)
        y = torch.randint(0, 10, (16,), device="cuda", generator=g)
        if on_step is not None:
            on_step(step, model)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    hook.close()


def test_device_reductions_and_raw_values_match_the_host(tmp_path):
    model = _model()
    seen = {}

    def keep(step, m):  # the parameters the hook sees at the start of each step
        seen[step] = {n: p.detach().cpu().double().numpy().copy() for n, p in m.named_parameters()}

    _train(_hook(tmp_path / "t", 2, raw=True), model, 6, keep)
    trial = trainscope.create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 2, 4]
    name = "Sequential_0.weight"
    assert name in trial.tensor_names(collection="weights")
    for step in (0, 2, 4):
        want = seen[step]["0.weight"]
        got = trial.tensor(name).value(step)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want.astype(np.float32))
        for red, ref in (("min", want.min()), ("max", want.max()), ("mean", want.mean()),
                         ("std", want.std()), ("l2", np.sqrt((want ** 2).sum()))):
            assert trial.tensor(name).reduction_value(step, red) == pytest.approx(ref, rel=1e-5)
    grads = trial.tensor_names(collection="gradients")
    assert "gradient/Sequential_0.weight" in grads
    for g in grads:
        assert np.isfinite(trial.tensor(g).value(4)).all()
    loss = trial.tensor_names(collection="losses")
    assert loss and all(np.isfinite(trial.tensor(n).value(4)).all() for n in loss)


def test_no_device_synchronisation_on_steps_that_save_nothing(tmp_path):
    hook = _hook(tmp_path / "t", 1000, raw=True)  # saves at step 0 only
    model = _model()

    def strict_after_first(step, m):
        # From step 2 on (step 1's boundary flushed step 0's values) any synchronising CUDA call
        # raises: the hook must not make one.
        torch.cuda.set_sync_debug_mode("error" if step >= 2 else "default")

    try:
        _train(hook, model, 8, strict_after_first)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert trainscope.create_trial(str(tmp_path / "t")).steps() == [0]


def test_one_device_to_host_transfer_per_step_for_all_statistics(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    # Reductions only, every step. The loss is saved raw all the same (the losses collection is
    # always included, as in smdebug): its own copy, into pinned memory.
    hook = _hook(tmp_path / "t", 1, raw=False, collections=("weights", "gradients"))
    model = _model()
    n_params = len(list(model.parameters()))
    copies = {}
    state = {}

    def watch(step, m):
        if step == 3:
            state["prof"] = profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU])
            state["prof"].__enter__()
        if step == 4:  # a whole step: step 3's boundary (step 2's statistics) and its training
            torch.cuda.synchronize()
            state["prof"].__exit__(None, None, None)

    _train(hook, model, 6, watch)
    for evt in state["prof"].events():
        if "Memcpy DtoH" in evt.name or "Memcpy DtoH" in getattr(evt, "kernel", ""):
            copies[evt.name] = copies.get(evt.name, 0) + 1
    # The statistics of 2 * n_params weights and gradients crossed once, into pageable memory (a
    # copy a step); the loss, saved raw, once into pinned memory. Nothing else crossed.
    assert copies == {"Memcpy DtoH (Device -> Pageable)": 1,
                      "Memcpy DtoH (Device -> Pinned)": 1}, (copies, n_params)
    trial = trainscope.create_trial(str(tmp_path / "t"))
    assert 3 in trial.steps()
    assert len(trial.tensor_names(collection="gradients", step=3)) == n_params
    assert trial.tensor_names(collection="losses", step=3) == ["CrossEntropyLoss_output_0"]
