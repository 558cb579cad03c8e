"""smdebug.core.access_layer.file: the temporary-path rule."""

from trainscope.smdebug.helpers import SMDEBUG_TEMP_PATH_SUFFIX, get_temp_path  # noqa: F401
