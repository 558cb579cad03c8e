"""The built-in debugging rules as Python classes with smdebug's parameter names and defaults.

Each class is a :class:`trainscope.rules.Rule`; its ``invoke_at_step`` runs the C++ rule of the
same name (docs/rules/<Rule>.md) on the trial at ``base_trial.path``, through
``trainscope._core.rules``. Parameters are passed to the C++ rule as strings, as SageMaker passes
them, so the C++ rule validates them (unknown names are refused by Python's signature; bad values
raise SMDebugValueError with the C++ message).

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


class VanishingGradient(_BuiltinRule):
    def __init__(self, base_trial, threshold=0.0000001, action_str=""):
        super().__init__(base_trial, action_str, threshold=threshold)


class ExplodingTensor(_BuiltinRule):
    def __init__(self, base_trial, collection_names=None, tensor_regex=None, only_nan=False,
                 action_str=""):
        super().__init__(base_trial, action_str, collection_names=collection_names,
                         tensor_regex=tensor_regex, only_nan=only_nan)


class LossNotDecreasing(_BuiltinRule):
    def __init__(self, base_trial, collection_names=None, tensor_regex=None,
                 use_losses_collection=True, num_steps=10, diff_percent=0.1,
                 increase_threshold_percent=5, mode=None, condition="trend",
                 divergence_factor=10, action_str=""):
        super().__init__(base_trial, action_str, collection_names=collection_names,
                         tensor_regex=tensor_regex, use_losses_collection=use_losses_collection,
                         num_steps=num_steps, diff_percent=diff_percent,
                         increase_threshold_percent=increase_threshold_percent, mode=mode,
                         condition=condition, divergence_factor=divergence_factor)


class Overfit(_BuiltinRule):
    def __init__(self, base_trial, tensor_regex=None, start_step=0, patience=1,
                 ratio_threshold=0.1, action_str=""):
        super().__init__(base_trial, action_str, tensor_regex=tensor_regex, start_step=start_step,
                         patience=patience, ratio_threshold=ratio_threshold)


class Overtraining(_BuiltinRule):
    def __init__(self, base_trial, patience_train=5, patience_validation=10, delta=0.01,
                 action_str=""):
        super().__init__(base_trial, action_str, patience_train=patience_train,
                         patience_validation=patience_validation, delta=delta)


class SimilarAcrossRuns(_BuiltinRule):
    def __init__(self, base_trial, other_trials, collection_names=None, tensor_regex=None,
                 rtol=1e-05, atol=1e-08, action_str=""):
        if other_trials is None:
            raise SMDebugValueError("SimilarAcrossRuns: other_trials is required")
        others = list(other_trials) if isinstance(other_trials, (list, tuple)) else [other_trials]
        paths = [t if isinstance(t, str) else t.path for t in others]
        super().__init__(base_trial, action_str, [t for t in others if not isinstance(t, str)],
                         other_trials=paths, collection_names=collection_names,
                         tensor_regex=tensor_regex, rtol=rtol, atol=atol)


class TensorVariance(_BuiltinRule):
    def __init__(self, base_trial, collection_names=None, tensor_regex=None, max_threshold=None,
                 min_threshold=None, action_str=""):
        super().__init__(base_trial, action_str, collection_names=collection_names,
                         tensor_regex=tensor_regex, max_threshold=max_threshold,
                         min_threshold=min_threshold)


class UnchangedTensor(_BuiltinRule):
    def __init__(self, base_trial, collection_names=None, tensor_regex=None, num_steps=3,
                 rtol=1e-05, atol=1e-08, equal_nan=False, action_str=""):
        super().__init__(base_trial, action_str, collection_names=collection_names,
                         tensor_regex=tensor_regex, num_steps=num_steps, rtol=rtol, atol=atol,
                         equal_nan=equal_nan)


class CheckInputImages(_BuiltinRule):
    def __init__(self, base_trial, threshold_mean=0.2, threshold_samples=500,
                 regex=".*hybridsequential0_input_0|^[A-Z][A-Za-z0-9]*_input_0$", channel=1,
                 action_str=""):
        super().__init__(base_trial, action_str, threshold_mean=threshold_mean,
                         threshold_samples=threshold_samples, regex=regex, channel=channel)


class NLPSequenceRatio(_BuiltinRule):
    def __init__(self, base_trial, tensor_regex=".*embed[A-Za-z_]*[0-9]*_input_0",
                 token_values="0", token_thresholds_percent="50", action_str=""):
        super().__init__(base_trial, action_str, tensor_regex=tensor_regex,
                         token_values=token_values,
                         token_thresholds_percent=token_thresholds_percent)


class PoorWeightInitialization(_BuiltinRule):
    def __init__(self, base_trial, activation_inputs_regex=".*relu\\w*_input", threshold=10.0,
                 distribution_range=0.001, patience=5, steps=10, action_str=""):
        super().__init__(base_trial, action_str, activation_inputs_regex=activation_inputs_regex,
                         threshold=threshold, distribution_range=distribution_range,
                         patience=patience, steps=steps)


class SaturatedActivation(_BuiltinRule):
    def __init__(self, base_trial, collection_names=None,
                 tensor_regex=".*tanh\\w*_input|.*sigmoid\\w*_input",
                 threshold_tanh_min=-9.4999, threshold_tanh_max=9.4999,
                 threshold_sigmoid_min=-23, threshold_sigmoid_max=16.99999,
                 threshold_inactivity=1.0, threshold_layer=50.0, action_str=""):
        super().__init__(base_trial, action_str, collection_names=collection_names,
                         tensor_regex=tensor_regex, threshold_tanh_min=threshold_tanh_min,
                         threshold_tanh_max=threshold_tanh_max,
                         threshold_sigmoid_min=threshold_sigmoid_min,
                         threshold_sigmoid_max=threshold_sigmoid_max,
                         threshold_inactivity=threshold_inactivity,
                         threshold_layer=threshold_layer)


class DeadRelu(_BuiltinRule):
    def __init__(self, base_trial, collection_names=None,
                 tensor_regex=".*relu\\w*_output|(^|\\.)act\\w*_output", threshold_inactivity=1.0,
                 threshold_layer=50.0, threshold_layer_zeros=90.0, action_str=""):
        super().__init__(base_trial, action_str, collection_names=collection_names,
                         tensor_regex=tensor_regex, threshold_inactivity=threshold_inactivity,
                         threshold_layer=threshold_layer,
                         threshold_layer_zeros=threshold_layer_zeros)


class WeightUpdateRatio(_BuiltinRule):
    def __init__(self, base_trial, num_steps=None, large_threshold=10.0,
                 small_threshold=0.00000001, epsilon=0.000000001, action_str=""):
        super().__init__(base_trial, action_str, num_steps=num_steps,
                         large_threshold=large_threshold, small_threshold=small_threshold,
                         epsilon=epsilon)


class AllZero(_BuiltinRule):
    def __init__(self, base_trial, collection_names=None, tensor_regex=None, threshold=100.0,
                 action_str=""):
        super().__init__(base_trial, action_str, collection_names=collection_names,
                         tensor_regex=tensor_regex, threshold=threshold)


class ClassImbalance(_BuiltinRule):
    def __init__(self, base_trial, threshold_imbalance=10, threshold_misprediction=0.7,
                 samples=500, argmax=False, labels_regex=".*labels",
                 predictions_regex=".*predictions", action_str=""):
        super().__init__(base_trial, action_str, threshold_imbalance=threshold_imbalance,
                         threshold_misprediction=threshold_misprediction, samples=samples,
                         argmax=argmax, labels_regex=labels_regex,
                         predictions_regex=predictions_regex)


class Confusion(_BuiltinRule):
    def __init__(self, base_trial, category_no=None, labels="labels", predictions="predictions",
                 labels_collection="labels", predictions_collection="predictions", min_diag=0.9,
                 max_off_diag=0.1, window=1000, action_str=""):
        super().__init__(base_trial, action_str, category_no=category_no, labels=labels,
                         predictions=predictions, labels_collection=labels_collection,
                         predictions_collection=predictions_collection, min_diag=min_diag,
                         max_off_diag=max_off_diag, window=window)


class StalledTrainingRule(_BuiltinRule):
    """In a Python invoke_rule loop the rule is only asked when a step arrives; a training that
    stalls forever is seen by ``trainscope run``'s runner, which ticks the rule on a clock."""

    def __init__(self, base_trial, threshold=1800, stop_training_on_fire=False,
                 training_job_name_prefix=None, action_str=""):
        super().__init__(base_trial, action_str, threshold=threshold,
                         stop_training_on_fire=stop_training_on_fire,
                         training_job_name_prefix=training_job_name_prefix)


BUILTIN_RULES = {
    cls.__name__: cls
    for cls in (
        VanishingGradient, ExplodingTensor, LossNotDecreasing, Overfit, Overtraining,
        SimilarAcrossRuns, TensorVariance, UnchangedTensor, CheckInputImages, NLPSequenceRatio,
        PoorWeightInitialization, SaturatedActivation, DeadRelu, WeightUpdateRatio, AllZero,
        ClassImbalance, Confusion, StalledTrainingRule,
    )
}
