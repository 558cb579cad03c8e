"""trainscope.rules: smdebug's Rule / invoke_rule contract, a custom rule written for smdebug
running unchanged but for the import (checked against smdebug itself on the same trial), and the
built-in rules as Python classes over the C++ rules."""

import textwrap

import numpy as np
import pytest

from conftest import write_trial

LOSS = "CrossEntropyLoss_output_0"


def _collections():
    from trainscope.collection import Collection

    return [
        Collection("gradients", include_regex=["^gradient"]),
        Collection("weights", include_regex=["^(?!gradient).*weight"]),
        Collection("losses", include_regex=["[Ll]oss_(?!input).*output"]),
    ]


def _training(path, n=30, vanish_at=None, nan_at=None, end=True, eval_at=()):
    """n TRAIN steps: fc1.weight, its gradient (mean |g| 1e-3, 1e-9 from vanish_at) and a
    decreasing loss; steps listed in eval_at are EVAL steps with only the loss."""
    steps, train, ev = [], 0, 0
    for s in range(n):
        if s in eval_at:
            steps.append((s, "EVAL", ev, {LOSS: np.float32(0.5)}))
            ev += 1
            continue
        scale = 1e-9 if vanish_at is not None and s >= vanish_at else 1e-3
        g = (np.arange(16, dtype=np.float32).reshape(4, 4) % 2 * 2 - 1) * np.float32(scale)
        if nan_at is not None and s == nan_at:
            g[1, 1] = np.nan
        w = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4) + np.float32(0.001 * s)
        loss = np.float32(2.0 / (1.0 + 0.1 * s))
        steps.append((s, "TRAIN", train, {"gradient/fc1.weight": g, "fc1.weight": w, LOSS: loss}))
        train += 1
    return write_trial(path, steps, collections=_collections(), end=end)


# A custom rule exactly as smdebug's documentation writes one (docs/analysis.md, "Writing a
# custom rule"); {IMPORT} is the only line that changes.
CUSTOM_RULE = textwrap.dedent(
    """
    {IMPORT}

    class CustomGradientRule(Rule):
        def __init__(self, base_trial, threshold=10.0):
            super().__init__(base_trial, action_str="")
            self.threshold = float(threshold)

        def set_required_tensors(self, step):
            for tname in self.base_trial.tensor_names(collection="gradients"):
                self.req_tensors.add(tname, steps=[step])

        def invoke_at_step(self, step):
            for tname in self.req_tensors.get_names():
                t = self.base_trial.tensor(tname)
                abs_mean = t.reduction_value(step, "mean", abs=True)
                self.seen.append(step)
                if abs_mean < self.threshold:
                    return True
            return False

    def run(trial, threshold, **kw):
        rule = CustomGradientRule(trial, threshold=threshold)
        rule.seen = []
        met = []
        step = kw.pop("start_step", 0)
        try:
            invoke_rule(rule, start_step=step, raise_eval_cond=True, **kw)
        except RuleEvaluationConditionMet as e:
            met.append(e.step)
        return rule.seen, met
    """
)


def _load_custom(import_line):
    ns = {}
    exec(CUSTOM_RULE.replace("{IMPORT}", import_line), ns)
    return ns["run"]


def test_custom_smdebug_rule_runs_unchanged_and_agrees_with_smdebug(tmp_path):
    path = _training(tmp_path / "t", n=20, vanish_at=12)
    import trainscope

    run_ts = _load_custom(
        "from trainscope.rules import Rule, invoke_rule\n"
        "from trainscope.exceptions import RuleEvaluationConditionMet"
    )
    seen, met = run_ts(trainscope.create_trial(path), 1e-7)
    assert met == [12]
    assert seen == list(range(13))

    smd_rules = pytest.importorskip("smdebug.rules")
    del smd_rules
    from smdebug.trials import create_trial as smd_create_trial

    run_smd = _load_custom(
        "from smdebug.rules import Rule, invoke_rule\n"
        "from smdebug.exceptions import RuleEvaluationConditionMet"
    )
    smd_seen, smd_met = run_smd(smd_create_trial(path), 1e-7)
    assert (smd_seen, smd_met) == (seen, met)


def test_invoke_rule_ends_with_no_more_data_and_skips_missing_steps(tmp_path):
    from trainscope.exceptions import NoMoreData
    from trainscope.rules import invoke_rule

    path = _training(tmp_path / "t", n=10)
    import trainscope

    run = _load_custom(
        "from trainscope.rules import Rule, invoke_rule\n"
        "from trainscope.exceptions import RuleEvaluationConditionMet"
    )
    with pytest.raises(NoMoreData):
        # smdebug's loop does not catch NoMoreData: it ends an unbounded loop.
        run(trainscope.create_trial(path), 0.0)
    seen, met = run(trainscope.create_trial(path), 0.0, end_step=10)
    assert met == [] and seen == list(range(10))
    del invoke_rule


def test_required_tensor_that_was_never_saved_skips_the_step(tmp_path):
    import trainscope
    from trainscope.rules import Rule, invoke_rule

    class NeedsMissing(Rule):
        def __init__(self, base_trial):
            super().__init__(base_trial, action_str="")
            self.calls = 0

        def set_required_tensors(self, step):
            self.req_tensors.add("no_such_tensor", steps=[step])

        def invoke_at_step(self, step):
            self.calls += 1
            return True

    rule = NeedsMissing(trainscope.create_trial(_training(tmp_path / "t", n=5)))
    invoke_rule(rule, end_step=5)  # TensorUnavailable is swallowed, step after step
    assert rule.calls == 0


def test_builtin_rule_wrappers_fire_like_the_cpp_rules(tmp_path):
    import trainscope
    from trainscope.exceptions import RuleEvaluationConditionMet
    from trainscope.rules import ExplodingTensor, VanishingGradient, invoke_rule

    trial = trainscope.create_trial(_training(tmp_path / "t", n=20, vanish_at=7, nan_at=15))
    rule = VanishingGradient(trial, threshold=1e-7)
    with pytest.raises(RuleEvaluationConditionMet) as e:
        invoke_rule(rule, raise_eval_cond=True)
    # Vanished from step 7; the rule reports at the second saved step below its threshold.
    assert e.value.step == 8
    f = rule.last_findings[0]
    assert f["rule"] == "VanishingGradient" and f["step"] == 8 and f["mode"] == "TRAIN"
    assert f["tensor"] == "gradient/fc1.weight"
    assert f["threshold"] == pytest.approx(1e-7)
    assert f["recommendation"]

    exploding = ExplodingTensor(trial, collection_names=["gradients"])
    with pytest.raises(RuleEvaluationConditionMet) as e:
        invoke_rule(exploding, raise_eval_cond=True)
    assert e.value.step == 15
    assert exploding.last_findings[0]["value"] == 1  # one NaN


def test_builtin_rule_runs_to_the_end_without_raise(tmp_path):
    import trainscope
    from trainscope.exceptions import NoMoreData
    from trainscope.rules import VanishingGradient, invoke_rule

    trial = trainscope.create_trial(_training(tmp_path / "t", n=12, vanish_at=10))
    rule = VanishingGradient(trial)
    with pytest.raises(NoMoreData):
        invoke_rule(rule)  # the condition met at 11 is logged; NoMoreData ends the loop
    # Vanished from step 10: found at 11, the second saved step below the threshold.
    assert [f["step"] for f in rule.findings] == [11]


def test_builtin_rules_judge_at_the_end_of_the_data(tmp_path):
    """Overfit's last evaluation pass is judged when the data ends (smdebug's end_of_rule); one
    pass, so with SageMaker's condition (the default, stall, needs 3 passes)."""
    import trainscope
    from trainscope.exceptions import RuleEvaluationConditionMet
    from trainscope.rules import Overfit, invoke_rule

    steps = []
    for s in range(10):
        steps.append((s, "TRAIN", s, {LOSS: np.float32(0.2)}))
    for s in range(10, 13):
        steps.append((s, "EVAL", s - 10, {LOSS: np.float32(0.5)}))
    trial = trainscope.create_trial(write_trial(tmp_path / "t", steps, collections=_collections()))
    rule = Overfit(trial, condition="ratio")
    with pytest.raises(RuleEvaluationConditionMet) as e:
        invoke_rule(rule, raise_eval_cond=True)
    assert e.value.end_of_rule
    assert e.value.step == 12
    assert rule.last_findings[0]["value"] == pytest.approx(1.5)


def test_builtin_parameters_are_validated(tmp_path):
    import trainscope
    from trainscope.exceptions import SMDebugValueError
    from trainscope.rules import AllZero, LossNotDecreasing, VanishingGradient

    trial = trainscope.create_trial(_training(tmp_path / "t", n=3))
    with pytest.raises(TypeError):
        VanishingGradient(trial, threshhold=1e-7)  # smdebug's names only
    # AllZero without a selection starts (so `trainscope run --rules all` does) and checks
    # nothing; its status says what it needs.
    assert AllZero(trial).parameters["tensor_regex"] == "None"
    with pytest.raises(SMDebugValueError, match="mode 'TRIAN'"):
        LossNotDecreasing(trial, mode="TRIAN")
    rule = LossNotDecreasing(trial, num_steps=20, collection_names=["losses"])
    assert rule.parameters["num_steps"] == "20"
    assert rule.parameters["collection_names"] == "losses"
    assert {c["name"] for c in rule.required_collections()} >= {"losses"}


def test_every_builtin_rule_is_exposed_with_smdebug_names():
    import inspect

    from trainscope import _core
    from trainscope.rules import BUILTIN_RULES

    debugging = [n for n in _core.rules.rule_names()
                 if _core.rules.describe_rule(n).get("kind", "debugging") == "debugging"]
    assert sorted(BUILTIN_RULES) == sorted(debugging)
    for name, cls in BUILTIN_RULES.items():
        info = _core.rules.describe_rule(name)
        py_params = set(inspect.signature(cls.__init__).parameters) - {"self", "base_trial",
                                                                      "action_str"}
        cpp_params = {p["name"] for p in info["params"]}
        assert py_params == cpp_params, name


def test_builtin_signatures_are_smdebugs_from_the_cpp_spec(tmp_path):
    """The classes are built from the C++ ParamSpec: their defaults and parameter order are
    smdebug's (pinned here from smdebug's rule signatures), positional arguments land on the
    right parameter, and a default reaches the C++ rule as the string SageMaker would pass."""
    import inspect

    import trainscope
    from trainscope.rules import (DeadRelu, LossNotDecreasing, SimilarAcrossRuns,
                                  VanishingGradient, WeightUpdateRatio)

    def defaults(cls):
        return {n: p.default for n, p in inspect.signature(cls.__init__).parameters.items()
                if n not in ("self", "base_trial")}

    assert defaults(VanishingGradient) == {"threshold": 1e-07, "action_str": ""}
    assert list(defaults(LossNotDecreasing).items())[:6] == [
        ("collection_names", None), ("tensor_regex", None), ("use_losses_collection", True),
        ("num_steps", 10), ("diff_percent", 0.1), ("increase_threshold_percent", 5)]
    assert defaults(WeightUpdateRatio)["small_threshold"] == 1e-08
    assert defaults(DeadRelu)["tensor_regex"] == ".*relu\\w*_output|(^|\\.)act\\w*_output"
    other = inspect.signature(SimilarAcrossRuns.__init__).parameters["other_trials"]
    assert other.default is inspect.Parameter.empty

    trial = trainscope.create_trial(_training(tmp_path / "t", n=3))
    rule = VanishingGradient(trial, 0.5)
    assert rule.parameters == {"threshold": "0.5"}
    assert VanishingGradient(trial).parameters == {"threshold": "1e-07"}
    with pytest.raises(TypeError, match="SimilarAcrossRuns.*other_trials"):
        SimilarAcrossRuns(trial)


def test_hook_collection_config_for_a_rule_set():
    import json

    from trainscope import _core

    cfg = json.loads(_core.rules.hook_collection_config(
        ["VanishingGradient", "ExplodingTensor", "DeadRelu"], [{}, {}, {}]))
    by_name = {c["CollectionName"]: c["CollectionParameters"] for c in cfg}
    assert by_name["gradients"]["reductions"] == "abs_mean,zero_fraction,max,min"
    assert by_name["gradients"]["save_raw_tensor"] == "false"
    assert by_name["losses"]["save_interval"] == "1"
    assert "relu" in by_name["relu_output"]["include_regex"]
