"""smdebug.core.hook_utils."""

from trainscope.smdebug.helpers import verify_and_get_out_dir  # noqa: F401
