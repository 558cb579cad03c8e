"""The hook records which registered parameters are trainable and which frozen (the collections
file's _meta.parameters, docs/formats/trial.md), and the rules use it: a parameter frozen on
purpose is skipped, a trainable one that never gets a gradient (a detach() in forward) is
reported with that cause. Real PyTorch trainings, real trials."""

import glob
import json

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import trainscope.pytorch as ts  # noqa: E402


class Encoded(nn.Module):
    def __init__(self, detach):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)
        self.detach = detach

    def forward(self, x):
        h = self.encoder(x)
        return self.head(h.detach() if self.detach else h)


def _train(out, model, steps=12):
    hook = ts.Hook(out_dir=str(out), save_config=ts.SaveConfig(save_interval=1), quiet=True,
                   include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_module(model)
    criterion = nn.CrossEntropyLoss()
    hook.register_loss(criterion)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x, y = torch.randn(16, 8, generator=g), torch.randint(0, 3, (16,), generator=g)
        opt.zero_grad()
        criterion(model(x), y).backward()
        opt.step()
    hook.close()
    return str(out)


def _meta(trial):
    (path,) = glob.glob(f"{trial}/collections/000000000/*_collections.json")
    with open(path) as f:
        return json.load(f)["_meta"]


def _unchanged_findings(trial):
    import trainscope
    from trainscope.exceptions import NoMoreData
    from trainscope.rules import UnchangedTensor, invoke_rule

    rule = UnchangedTensor(trainscope.create_trial(trial), collection_names="weights")
    with pytest.raises(NoMoreData):
        invoke_rule(rule)
    return rule.findings


def test_collections_file_records_trainable_and_frozen_parameters(tmp_path):
    torch.manual_seed(0)
    model = Encoded(detach=False)
    model.encoder.requires_grad_(False)  # a frozen backbone
    meta = _meta(_train(tmp_path / "t", model))
    assert meta["num_workers"] == 1
    assert sorted(meta["parameters"]["frozen"]) == ["Encoded_encoder.0.bias",
                                                    "Encoded_encoder.0.weight"]
    assert sorted(meta["parameters"]["trainable"]) == ["Encoded_head.bias", "Encoded_head.weight"]


def test_frozen_on_purpose_is_quiet_but_a_cut_graph_is_reported(tmp_path):
    torch.manual_seed(0)
    frozen = Encoded(detach=False)
    frozen.encoder.requires_grad_(False)
    assert _unchanged_findings(_train(tmp_path / "frozen", frozen)) == []

    torch.manual_seed(0)
    cut = Encoded(detach=True)  # trainable, but detach() keeps every gradient from the encoder
    findings = _unchanged_findings(_train(tmp_path / "cut", cut))
    assert {f["tensor"] for f in findings} == {"Encoded_encoder.0.weight"}
    assert "no gradient ever reached it" in findings[0]["explanation"]
    assert "detach()" in findings[0]["recommendation"]


class DefinedOutOfOrder(nn.Module):
    """Defines its layers in another order than forward() runs them, as models often do."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 3)
        self.act = nn.Tanh()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))

    def forward(self, x):
        return self.head(self.act(self.body(x)))


def test_collections_file_records_modules_in_forward_order(tmp_path):
    torch.manual_seed(0)
    meta = _meta(_train(tmp_path / "t", DefinedOutOfOrder()))
    modules = [(m["name"], m["type"]) for m in meta["modules"]]
    # Leaf modules as they ran, a container after its contents, the registered module (by its
    # class name) last but for the loss, which runs after it.
    assert modules == [("body.0", "Linear"), ("body.1", "ReLU"), ("body.2", "Linear"),
                       ("body", "Sequential"), ("act", "Tanh"), ("head", "Linear"),
                       ("DefinedOutOfOrder", "DefinedOutOfOrder"),
                       ("CrossEntropyLoss", "CrossEntropyLoss")]
