"""Rules, with smdebug's contract: a custom rule written for ``smdebug.rules`` runs unchanged
after changing the import to ``trainscope.rules``.

- :class:`Rule`: subclass it, implement ``invoke_at_step(step)`` (True = condition met) and
  optionally ``set_required_tensors(step)`` with ``self.req_tensors.add(...)``.
- :func:`invoke_rule`: smdebug's evaluation loop.
- Every built-in debugging rule as a class with smdebug's parameter names (evaluated by the C++
  rules; docs/rules/<Rule>.md).
"""

from .builtin import (
    AllZero,
    CheckInputImages,
    ClassImbalance,
    Confusion,
    DeadRelu,
    ExplodingTensor,
    LossNotDecreasing,
    NLPSequenceRatio,
    Overfit,
    Overtraining,
    PoorWeightInitialization,
    SaturatedActivation,
    SimilarAcrossRuns,
    StalledTrainingRule,
    TensorVariance,
    UnchangedTensor,
    VanishingGradient,
    WeightUpdateRatio,
    BUILTIN_RULES,
    describe_rule,
)
from .req_tensors import RequiredTensors, RequiredTensorsForTrial
from .rule import Rule
from .rule_invoker import invoke_rule

__all__ = [
    "Rule",
    "invoke_rule",
    "RequiredTensors",
    "RequiredTensorsForTrial",
    "BUILTIN_RULES",
    "describe_rule",
    "AllZero",
    "CheckInputImages",
    "ClassImbalance",
    "Confusion",
    "DeadRelu",
    "ExplodingTensor",
    "LossNotDecreasing",
    "NLPSequenceRatio",
    "Overfit",
    "Overtraining",
    "PoorWeightInitialization",
    "SaturatedActivation",
    "SimilarAcrossRuns",
    "StalledTrainingRule",
    "TensorVariance",
    "UnchangedTensor",
    "VanishingGradient",
    "WeightUpdateRatio",
]
