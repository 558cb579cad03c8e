"""Tensor names of trainscope.pytorch's hook: smdebug's scheme on plain, numbered, wrapped,
frozen and compiled models."""

import pytest
import torch
import torch.nn as nn

import trainscope.pytorch as ts


def _train(hook, model, criterion, steps=2, target=None):
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x = torch.randn(3, 4, generator=g)
        y = target if target is not None else torch.randint(0, 2, (3,), generator=g)
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
    hook.close()


def _names(path):
    return set(ts.create_trial(str(path)).tensor_names())


def _every_step(tmp_path, **kw):
    return ts.Hook(out_dir=str(tmp_path / "t"), save_config=ts.SaveConfig(save_interval=1),
                   quiet=True, **kw)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 5)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(5, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_sequential_numbered_layers(tmp_path):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 2)))
    hook = _every_step(tmp_path, save_all=True)
    hook.register_module(model)
    crit = nn.CrossEntropyLoss()
    hook.register_loss(crit)
    _train(hook, model, crit)
    names = _names(tmp_path / "t")
    assert {"Sequential_0.weight", "Sequential_0.bias", "Sequential_2.0.weight",
            "gradient/Sequential_2.0.weight", "0_output_0", "1_input_0", "2.0_output_0",
            "Sequential_output_0", "Sequential_input_0", "CrossEntropyLoss_output_0",
            "CrossEntropyLoss_input_1"} <= names


def test_frozen_parameters_get_no_gradient_and_do_not_break(tmp_path):
    model = Net()
    model.fc1.weight.requires_grad = False
    hook = _every_step(tmp_path, include_collections=["weights", "gradients"])
    hook.register_module(model)
    _train(hook, model, nn.CrossEntropyLoss())
    names = _names(tmp_path / "t")
    assert "Net_fc1.weight" in names  # its value is still saved
    assert "gradient/Net_fc1.weight" not in names
    assert "gradient/Net_fc1.bias" in names
    assert hook.stats()["errors"] == 0


@pytest.mark.parametrize("wrap", ["DataParallel", "DistributedDataParallel"])
def test_wrappers_do_not_change_names(tmp_path, wrap):
    model = Net()
    if wrap == "DataParallel":
        wrapped = nn.DataParallel(model)
    else:
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0, world_size=1)
        wrapped = nn.parallel.DistributedDataParallel(model)
    try:
        hook = _every_step(tmp_path, include_collections=["weights", "gradients", "outputs"])
        hook.get_collection("outputs").include("_output_")
        hook.register_module(wrapped)
        _train(hook, wrapped, nn.CrossEntropyLoss())
    finally:
        if wrap != "DataParallel":
            torch.distributed.destroy_process_group()
    names = _names(tmp_path / "t")
    assert {"Net_fc1.weight", "gradient/Net_fc2.bias", "fc1_output_0", "Net_output_0"} <= names
    assert not any("module." in n or n.startswith("DataParallel") for n in names), names


def test_loss_registered_twice_or_inside_the_model_is_saved_once(tmp_path):
    class WithLoss(Net):
        def __init__(self):
            super().__init__()
            self.criterion = nn.CrossEntropyLoss()

    model = WithLoss()
    hook = _every_step(tmp_path)
    hook.register_module(model)
    hook.register_loss(model.criterion)
    hook.register_loss(model.criterion)
    _train(hook, model, model.criterion)
    names = _names(tmp_path / "t")
    assert "CrossEntropyLoss_output_0" in names
    assert "CrossEntropyLoss_output_1" not in names  # smdebug saved it twice


def test_record_tensor_value_for_functional_losses(tmp_path):
    model = Net()
    hook = _every_step(tmp_path)
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(torch.randn(3, 4)), torch.zeros(3, 2))
        hook.record_tensor_value("mse_loss", loss)
        loss.backward()
        opt.step()
    hook.close()
    trial = ts.create_trial(str(tmp_path / "t"))
    # "mse_loss_output_0" matches the losses regex [Ll]oss_(?!input).*output
    assert trial.tensor("mse_loss_output_0").steps() == [0, 1]


def test_register_module_twice_is_an_error(tmp_path):
    model = Net()
    hook = _every_step(tmp_path)
    hook.register_module(model)
    with pytest.raises(ValueError, match="registered already"):
        hook.register_module(model)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        hook.register_module(lambda x: x)
    hook.close()


def test_compiled_module_does_not_crash(tmp_path):
    model = Net()
    compiled = torch.compile(model, backend="eager")
    hook = _every_step(tmp_path, include_collections=["weights", "gradients", "losses"])
    hook.register_module(compiled)
    crit = nn.CrossEntropyLoss()
    hook.register_loss(crit)
    _train(hook, compiled, crit, steps=3)
    trial = ts.create_trial(str(tmp_path / "t"))
    assert trial.tensor("Net_fc1.weight").steps() == [0, 1, 2]
    assert trial.tensor("gradient/Net_fc2.weight").steps() == [0, 1, 2]
    assert trial.tensor("CrossEntropyLoss_output_0").steps() == [0, 1, 2]


def test_names_are_the_cores_and_made_once(tmp_path):
    """Every name comes from the core's one implementation (trainscope/tensor_names.h, which
    the LibTorch and C++ hooks use too), and is made once: the steps after the first ask the
    core for no name (the hot path stays in Python)."""
    from collections import Counter

    from trainscope import _core

    assert _core.parameter_name("Net", "fc1.weight") == "Net_fc1.weight"
    assert _core.gradient_name("Net_fc1.weight") == "gradient/Net_fc1.weight"
    assert _core.output_name("relu", 2) == "relu_output_2"
    assert _core.input_name("fc1", 0) == "fc1_input_0"
    assert _core.output_prefix("fc1") == "fc1_output_"
    assert _core.scalar_name("lr") == "scalar/lr"
    assert _core.user_path("_fsdp_wrapped_module.fc1._fsdp_wrapped_module") == "fc1"
    # smdebug's class attributes, from the core
    assert (ts.Hook.GRADIENT_PREFIX, ts.Hook.SCALAR_PREFIX, ts.Hook.INPUT_TENSOR_SUFFIX,
            ts.Hook.OUTPUT_TENSOR_SUFFIX) == ("gradient/", "scalar/", "_input_", "_output_")

    calls = Counter()

    class Counting:
        def __getattr__(self, attr):
            value = getattr(_core, attr)
            if not callable(value):
                return value

            def counted(*args):
                calls[attr] += 1
                return value(*args)

            return counted

    model, crit = Net(), nn.CrossEntropyLoss()
    hook = _every_step(tmp_path, save_all=True)
    hook._names._core = Counting()
    hook.register_module(model)
    hook.register_loss(crit)
    assert calls["gradient_name"] == 4 and calls["parameter_name"] == 4
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    for _ in range(4):
        opt.zero_grad()
        loss = crit(model(torch.randn(3, 4)), torch.tensor([0, 1, 0]))
        hook.record_tensor_value("my_loss", loss)
        loss.backward()
        opt.step()
        seen.append(dict(calls))
    hook.close()
    assert seen[0]["output_name"] > 0 and seen[0]["input_name"] > 0
    assert seen[1] == seen[2] == seen[3], seen  # no name made after the first step
    assert seen[0] == seen[1]  # the first step's names were made in its forward pass
    names = _names(tmp_path / "t")
    assert {"Net_fc1.weight", "gradient/Net_fc2.bias", "fc1_input_0", "act_output_0",
            "Net_output_0", "CrossEntropyLoss_output_0", "CrossEntropyLoss_input_1",
            "my_loss_output_0"} <= names
