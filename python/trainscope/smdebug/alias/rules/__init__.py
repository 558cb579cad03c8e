"""smdebug.rules: trainscope's Rule base class and rule loop (and its built-in rules)."""

from trainscope.rules import *  # noqa: F401,F403
from trainscope.rules import RequiredTensors, RequiredTensorsForTrial, Rule, invoke_rule  # noqa: F401
