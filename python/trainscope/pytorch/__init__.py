"""trainscope.pytorch: a drop-in for ``smdebug.pytorch``.

    import trainscope.pytorch as smd
    hook = smd.Hook(out_dir="/tmp/run1", save_config=smd.SaveConfig(save_interval=10),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(criterion)
    ...train as usual...
    hook.close()

Also available: Hook.create_from_json_file() (smdebug's JSON configuration, from
TRAINSCOPE_CONFIG or SMDEBUG_CONFIG_FILE_PATH), hook.step() for an explicit step boundary, and
hook.get_tensors() to read what was captured so far.
"""

from .. import modes
from ..modes import ModeKeys
from ..reduction_config import ReductionConfig
from ..save_config import SaveConfig, SaveConfigMode
from ..trials import create_trial
from .collection import Collection, CollectionKeys
from .hook import Hook
from .singleton import del_hook, get_hook, set_hook

__all__ = [
    "Collection",
    "CollectionKeys",
    "Hook",
    "ModeKeys",
    "ReductionConfig",
    "SaveConfig",
    "SaveConfigMode",
    "create_trial",
    "del_hook",
    "get_hook",
    "modes",
    "set_hook",
]
