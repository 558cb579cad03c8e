"""The Python API asks the C++ core the questions the hook asks it: which steps a save config
saves, which tensor names a collection matches, and which of smdebug's exceptions a failed
query is (a structured code on the Status, not its text). Each test trains a real hook and
checks the Python answer against what the hook wrote."""

import pickle

import torch
import torch.nn as nn

import trainscope.pytorch as ts
from trainscope.collection import Collection
from trainscope.save_config import SaveConfigMode
from tiny_net import Net


def _train(out_dir, steps, **hook_args):
    torch.manual_seed(0)
    model, crit = Net(), nn.CrossEntropyLoss()
    hook = ts.Hook(out_dir=str(out_dir), quiet=True, **hook_args)
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(ts.modes.TRAIN)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x, y = torch.randn(3, 4, generator=g), torch.randint(0, 2, (3,), generator=g)
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
    hook.close()
    return ts.create_trial(str(out_dir))


def test_save_config_answers_as_the_hook_saved(tmp_path):
    mode_cfg = SaveConfigMode(save_interval=3, start_step=2, end_step=14, save_steps=[1, 16])
    trial = _train(tmp_path / "t", 18, save_config=ts.SaveConfig.from_save_config_mode(mode_cfg),
                   include_collections=["weights"])
    saved = trial.tensor("Net_fc1.weight").steps(mode=ts.modes.TRAIN)
    assert saved == [1, 3, 6, 9, 12, 16]
    assert [s for s in range(18) if mode_cfg.should_save_step(s)] == saved
    cfg = ts.SaveConfig.from_save_config_mode(mode_cfg)
    assert [s for s in range(18) if cfg.should_save_step(ts.modes.TRAIN, s)] == saved
    # A pickled copy answers the same (the compiled schedule is not pickled, it is rebuilt).
    copy = pickle.loads(pickle.dumps(mode_cfg))
    assert [s for s in range(18) if copy.should_save_step(s)] == saved
    # A changed value is seen at the next question.
    mode_cfg.save_steps = []
    assert mode_cfg.should_save_step(16) is False


def test_collection_matches_the_names_the_hook_saved(tmp_path):
    # A lookahead regex (ECMAScript and Python agree on it), matched by the core for both.
    regex = "^(?!gradient).*fc[12]\\.(weight|bias)$"
    hook_coll = ts.Collection("params", include_regex=[regex])
    torch.manual_seed(0)
    model, crit = Net(), nn.CrossEntropyLoss()
    hook = ts.Hook(out_dir=str(tmp_path / "t"), quiet=True, save_config=ts.SaveConfig(
        save_interval=1), include_collections=["params", "gradients"])
    hook.add_collection(hook_coll)
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        crit(model(torch.randn(3, 4)), torch.tensor([0, 1, 0])).backward()
        opt.step()
    hook.close()
    trial = ts.create_trial(str(tmp_path / "t"))
    names = trial.tensor_names()
    saved_params = set(trial.tensor_names(collection="params"))
    assert saved_params == {"Net_fc1.weight", "Net_fc1.bias", "Net_fc2.weight", "Net_fc2.bias"}
    value = Collection("params", include_regex=[regex])
    assert {n for n in names if value.matches(n)} == saved_params
    assert {n for n in names if hook_coll.matches(n)} == saved_params
    # One class: the hook's collection is a Collection, equal to the value it serializes to.
    assert isinstance(hook_coll, Collection)
    assert Collection.from_dict(hook_coll.to_json_dict()) == hook_coll
    assert pickle.loads(pickle.dumps(value)).matches("Net_fc2.bias")
