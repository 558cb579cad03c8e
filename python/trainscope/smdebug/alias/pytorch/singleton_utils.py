"""smdebug.pytorch.singleton_utils: the process's hook."""

from trainscope.pytorch.singleton import del_hook, get_hook, set_hook  # noqa: F401
