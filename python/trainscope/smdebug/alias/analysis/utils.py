"""smdebug.analysis.utils."""

from trainscope.trials import no_refresh  # noqa: F401
