"""The process-wide hook: get_hook, set_hook, del_hook (smdebug's singleton_utils)."""

_hook = None


def set_hook(custom_hook):
    """Makes `custom_hook` the hook get_hook() returns."""
    global _hook
    _hook = custom_hook


def del_hook():
    global _hook
    _hook = None


def get_hook(json_config_path=None, create_if_not_exists=False):
    """The current hook. Without one and with create_if_not_exists, creates it from the JSON
    configuration (json_config_path, else TRAINSCOPE_CONFIG, else SMDEBUG_CONFIG_FILE_PATH);
    returns None if there is no configuration file."""
    if _hook is None and create_if_not_exists:
        from .hook import Hook

        try:
            set_hook(Hook.create_from_json_file(json_config_path))
        except FileNotFoundError:
            pass
    return _hook
