"""smdebug.core.reader: importable; FileReader raises, naming what to use instead."""

from trainscope.smdebug.files import FileReader  # noqa: F401
