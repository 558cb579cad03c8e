"""invoke_rule: smdebug's rule evaluation loop (smdebug/rules/rule_invoker.py contract)."""

import logging

from ..exceptions import (
    NoMoreProfilerData,
    RuleEvaluationConditionMet,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)

logger = logging.getLogger("trainscope.rules")


def invoke_rule(rule_obj, start_step=0, end_step=None, raise_eval_cond=False):
    """Calls ``rule_obj.invoke(step)`` for step = start_step, start_step + 1, ... (below end_step
    when given). Steps without the data are skipped (TensorUnavailableForStep, StepUnavailable,
    TensorUnavailable); NoMoreData is not caught: it ends the loop when the training has ended.
    RuleEvaluationConditionMet is re-raised if ``raise_eval_cond``, else logged (and ends the loop
    when it says ``end_of_rule``)."""
    step = start_step if start_step is not None else 0
    name = type(rule_obj).__name__
    logger.info("Started execution of rule %s at step %s", name, step)
    while end_step is None or step < end_step:
        try:
            rule_obj.invoke(step)
        except (TensorUnavailableForStep, StepUnavailable, TensorUnavailable) as e:
            logger.debug(str(e))
        except RuleEvaluationConditionMet as e:
            if raise_eval_cond:
                raise
            logger.debug(str(e))
            if e.end_of_rule:
                break
        except NoMoreProfilerData as e:
            logger.info("No more profiler data for rule %s at timestamp %s", name, e.timestamp)
            break
        step += 1
    logger.info("Ended execution of rule %s at end_step %s", name, step - 1)
