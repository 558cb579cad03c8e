"""smdebug.core.locations."""

from trainscope.smdebug.files import IndexFileLocationUtils, TensorFileLocation  # noqa: F401
