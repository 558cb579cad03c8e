"""smdebug, resolved to trainscope (trainscope/smdebug/__init__.py says how). Every module under
this folder only re-exports trainscope's objects: no logic lives here."""

from trainscope import __version__
from trainscope.collection import CollectionKeys
from trainscope.modes import ModeKeys as modes
from trainscope.reduction_config import ReductionConfig
from trainscope.save_config import SaveConfig, SaveConfigMode
