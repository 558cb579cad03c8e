"""smdebug.pytorch: trainscope.pytorch (the hook and its configuration)."""

from trainscope.collection import CollectionKeys
from trainscope.modes import ModeKeys as modes
from trainscope.pytorch import (Collection, Hook, ReductionConfig, SaveConfig, SaveConfigMode,
                                create_trial, del_hook, get_hook, set_hook)
