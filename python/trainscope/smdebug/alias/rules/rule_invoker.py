"""smdebug.rules.rule_invoker."""

from trainscope.rules.rule_invoker import invoke_rule  # noqa: F401
