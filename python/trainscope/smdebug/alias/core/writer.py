"""smdebug.core.writer."""

from trainscope.smdebug.files import FileWriter  # noqa: F401
