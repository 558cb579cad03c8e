"""smdebug.rules.rule."""

from trainscope.rules.rule import Rule  # noqa: F401
