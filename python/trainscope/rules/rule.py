"""Rule: the base class of rules, with smdebug's contract (smdebug/rules/rule.py)."""

import contextlib
import json
import logging
from abc import ABC, abstractmethod

from ..exceptions import RuleEvaluationConditionMet
from .req_tensors import RequiredTensors

logger = logging.getLogger("trainscope.rules")


@contextlib.contextmanager
def _no_refresh(trials):
    """smdebug's analysis.utils.no_refresh: the trials do not refresh inside the block, so the
    steps required tensors saw are the steps invoke_at_step sees."""
    saved = [getattr(t, "dynamic_refresh", True) for t in trials]
    for t in trials:
        t.dynamic_refresh = False
    try:
        yield
    finally:
        for t, flag in zip(trials, saved):
            t.dynamic_refresh = flag


class Rule(ABC):
    """Subclass and implement ``invoke_at_step(step)``; see trainscope.rules.

    ``action_str`` is smdebug's JSON list/dict of actions ({"name": "stoptraining"|"email"|"sms",
    ...}). It is kept in ``self.actions`` (parsed) and reported with each condition met; the
    actions themselves run in ``trainscope run`` (the rule runner), not in this process.
    """

    def __init__(self, base_trial, action_str="", other_trials=None):
        self.base_trial = base_trial
        self.other_trials = other_trials
        self.trials = [base_trial]
        if other_trials is not None:
            self.trials += list(other_trials)
        self.req_tensors = RequiredTensors(base_trial, other_trials)
        self.logger = logger
        self.rule_name = self.__class__.__name__
        self.action_str = action_str
        self.actions = _parse_actions(action_str)
        self.report = {
            "RuleTriggered": 0,
            "Violations": 0,
            "Details": {},
            "Datapoints": 0,
            "RuleParameters": "",
        }

    def set_required_tensors(self, step):
        pass

    @abstractmethod
    def invoke_at_step(self, step):
        """True when the rule's condition is met at global step ``step``."""

    def invoke(self, step):
        self.logger.debug("Invoking rule %s for step %s", self.rule_name, step)
        self.base_trial.wait_for_steps([step])
        with _no_refresh(self.trials):
            self.req_tensors.clear()
            self.set_required_tensors(step)
            self.req_tensors.fetch()
            val = self.invoke_at_step(step)
        if val:
            self.report["RuleTriggered"] += 1
            self.report["Violations"] += 1
            if self.actions:
                self.logger.info(
                    "Rule %s: condition met at step %s; actions %s are run by the rule runner",
                    self.rule_name, step, [a.get("name") for a in self.actions],
                )
            raise RuleEvaluationConditionMet(self.rule_name, step)


def _parse_actions(action_str):
    if not action_str:
        return []
    try:
        parsed = json.loads(action_str)
    except (TypeError, ValueError):
        logger.warning("action_str is not JSON, ignored: %r", action_str)
        return []
    if isinstance(parsed, dict):
        parsed = [parsed]
    return [a for a in parsed if isinstance(a, dict)] if isinstance(parsed, list) else []
