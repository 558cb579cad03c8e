"""smdebug.exceptions: trainscope's exceptions, with smdebug's names."""

from trainscope.exceptions import *  # noqa: F401,F403
