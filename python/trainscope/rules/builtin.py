"""The built-in debugging rules as Python classes with smdebug's parameter names and defaults.

Each class is a :class:`trainscope.rules.Rule`; its ``invoke_at_step`` runs the C++ rule of the
same name (docs/rules/<Rule>.md) on the trial at ``base_trial.path``, through
``trainscope._core.rules``. The parameter names, their order and their defaults are the C++ rule's
ParamSpec (src/rules/rule_params.cc, read through ``describe_rule``): the classes are built from
it at import, so they cannot drift from the rule. Parameters are passed to the C++ rule as
strings, as SageMaker passes them, so the C++ rule validates them (unknown names are refused by
the signature with TypeError; bad values raise SMDebugValueError with the C++ message).

Findings of the last call are in ``rule.last_findings`` (a list of dicts with the keys of
docs/formats/rule_output.md), all findings so far in ``rule.findings`` (the last 1000).
"""

import json
import time

from .._native import load as _load_core
from ..exceptions import (
    NoMoreData,
    RuleEvaluationConditionMet,
    SMDebugRuntimeError,
    SMDebugValueError,
    StepUnavailable,
    TensorUnavailableForStep,
)
from ..modes import ModeKeys
from .rule import Rule

_MAX_FINDINGS = 1000


def _to_param(value):
    """A Python value as the string SageMaker would pass."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        return ",".join(_to_param(v) for v in value)
    if hasattr(value, "name") and hasattr(value, "value") and not isinstance(value, (int, float)):
        return str(value.name)  # a ModeKeys member
    return str(value)


def describe_rule(name):
    """The C++ description of a built-in rule: summary, parameters (name, type, default, help)
    and the collections it needs with its default parameters."""
    return _load_core().rules.describe_rule(name)


class _BuiltinRule(Rule):
    """A rule evaluated by the C++ rule named like the class."""

    def __init__(self, base_trial, action_str="", _other_trial_objects=None, **params):
        super().__init__(base_trial, action_str, _other_trial_objects or None)
        core = _load_core()
        self.parameters = {k: _to_param(v) for k, v in params.items()}
        self.findings = []
        self.last_findings = []
        self._finished = False
        self._last_step = -1
        try:
            self._handle = core.rules.create_rule(self.rule_name, self.parameters, base_trial.path)
        except ValueError as e:
            raise SMDebugValueError(str(e)) from None

    def required_collections(self):
        """The collections this rule needs saved (name, include_regex, save_interval, ...)."""
        return self._handle.required_collections()

    def _take(self, result, step):
        """(condition_met, end_of_rule, findings) of a C++ verdict; raises for errors."""
        code, message, met, end_of_rule, findings = result
        if code in ("NotFound",):
            raise TensorUnavailableForStep(message, step, ModeKeys.GLOBAL)
        if code in ("Unavailable", "OutOfRange"):
            raise StepUnavailable(step, ModeKeys.GLOBAL)
        if code != "OK":
            raise SMDebugRuntimeError(f"rule {self.rule_name} at step {step}: {code}: {message}")
        return met, end_of_rule, [json.loads(f) for f in findings]

    def _record(self, findings):
        self.last_findings = findings
        self.findings.extend(findings)
        del self.findings[:-_MAX_FINDINGS]

    def invoke_at_step(self, step):
        met, end_of_rule, findings = self._take(self._handle.invoke_at_step(step), step)
        self._last_step = step
        tick_met, _, tick_findings = self._take(self._handle.tick(time.time_ns() // 1000), step)
        self._record(findings + tick_findings)
        if end_of_rule:
            self._finished = True
            raise RuleEvaluationConditionMet(self.rule_name, step, end_of_rule=True)
        return met or tick_met

    def invoke(self, step):
        if self._finished:
            raise RuleEvaluationConditionMet(self.rule_name, step, end_of_rule=True)
        try:
            super().invoke(step)
        except NoMoreData:
            # The training ended: rules that judge at the end (Overfit's last pass, Confusion of
            # a run without evaluation) get their final say, then the loop ends as smdebug's does.
            if not self._finished:
                self._finished = True
                met, _, findings = self._take(self._handle.finish(self._last_step),
                                              self._last_step)
                self._record(findings)
                if met:
                    raise RuleEvaluationConditionMet(self.rule_name, self._last_step,
                                                     end_of_rule=True) from None
            raise


def _default_value(param):
    """The Python default of a C++ ParamSpec (its text as the signature shows it): None for
    "None"; a bool, an int or a float for those types (a float written as a whole number stays an
    int, as smdebug's signatures have it); lists and strings keep their text, as SageMaker
    passes them."""
    text, kind = param["default"], param["type"]
    if text == "None":
        return None
    if kind == "bool":
        return text == "True"
    if kind in ("int", "float"):
        try:
            return int(text)
        except ValueError:
            return float(text)
    return text


def _builtin_rule(name, doc=None, required=(), prepare=None):
    """The class of the C++ rule `name`: its __init__(base_trial, <parameters in the C++ order,
    with the C++ defaults>, action_str="") is built from the rule's ParamSpec (one source of the
    names and defaults). `required` parameters have no default. `prepare(base_trial, values)`
    may rewrite the bound values and returns the other trial objects, for rules that read
    several trials."""
    from inspect import Parameter, Signature  # noqa: PLC0415

    keyword = Parameter.POSITIONAL_OR_KEYWORD
    params = [Parameter("self", keyword), Parameter("base_trial", keyword)]
    for p in describe_rule(name)["params"]:
        default = Parameter.empty if p["name"] in required else _default_value(p)
        params.append(Parameter(p["name"], keyword, default=default))
    params.append(Parameter("action_str", keyword, default=""))
    signature = Signature(params)

    def __init__(self, *args, **kwargs):  # noqa: N807 (the made class's __init__)
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}(): {e}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        base_trial = values.pop("base_trial")
        action_str = values.pop("action_str")
        others = prepare(base_trial, values) if prepare else None
        _BuiltinRule.__init__(self, base_trial, action_str, others, **values)

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{name}.__init__"
    cls = type(name, (_BuiltinRule,), {"__init__": __init__, "__module__": __name__,
                                       "__doc__": doc or describe_rule(name)["summary"]})
    return cls


def _similar_across_runs_trials(base_trial, values):
    """SimilarAcrossRuns compares with other_trials (trial objects or paths): the C++ rule gets
    their paths, the Python rule keeps the objects."""
    other_trials = values["other_trials"]
    if other_trials is None:
        raise SMDebugValueError("SimilarAcrossRuns: other_trials is required")
    others = list(other_trials) if isinstance(other_trials, (list, tuple)) else [other_trials]
    values["other_trials"] = [t if isinstance(t, str) else t.path for t in others]
    return [t for t in others if not isinstance(t, str)]


VanishingGradient = _builtin_rule("VanishingGradient")
ExplodingTensor = _builtin_rule("ExplodingTensor")
LossNotDecreasing = _builtin_rule("LossNotDecreasing")
Overfit = _builtin_rule("Overfit")
Overtraining = _builtin_rule("Overtraining")
SimilarAcrossRuns = _builtin_rule("SimilarAcrossRuns", required=("other_trials",),
                                  prepare=_similar_across_runs_trials)
TensorVariance = _builtin_rule("TensorVariance")
UnchangedTensor = _builtin_rule("UnchangedTensor")
CheckInputImages = _builtin_rule("CheckInputImages")
NLPSequenceRatio = _builtin_rule("NLPSequenceRatio")
PoorWeightInitialization = _builtin_rule("PoorWeightInitialization")
SaturatedActivation = _builtin_rule("SaturatedActivation")
DeadRelu = _builtin_rule("DeadRelu")
WeightUpdateRatio = _builtin_rule("WeightUpdateRatio")
AllZero = _builtin_rule("AllZero")
ClassImbalance = _builtin_rule("ClassImbalance")
Confusion = _builtin_rule("Confusion")
StalledTrainingRule = _builtin_rule(
    "StalledTrainingRule",
    doc="In a Python invoke_rule loop the rule is only asked when a step arrives; a training "
        "that stalls forever is seen by ``trainscope run``'s runner, which ticks the rule on a "
        "clock.")


BUILTIN_RULES = {
    cls.__name__: cls
    for cls in (
        VanishingGradient, ExplodingTensor, LossNotDecreasing, Overfit, Overtraining,
        SimilarAcrossRuns, TensorVariance, UnchangedTensor, CheckInputImages, NLPSequenceRatio,
        PoorWeightInitialization, SaturatedActivation, DeadRelu, WeightUpdateRatio, AllZero,
        ClassImbalance, Confusion, StalledTrainingRule,
    )
}
