"""The small helpers of smdebug.core.utils that scripts and tests call (paths, JSON, S3 URL
splitting), written for trainscope. smdebug.core.utils re-exports them.
"""

import json
import logging
import os
from enum import Enum

import numpy as np

from ..exceptions import SMDebugTypeError, SMDebugValueError

# smdebug.core.access_layer.utils
END_OF_JOB_FILENAME = "training_job_end.ts"
ENV_RULE_STOP_SIGNAL_FILENAME = "SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE"
DEFAULT_GRACETIME_FOR_RULE_STOP_SEC = 60

# smdebug.core.modes
MODE_STEP_PLUGIN_NAME = "mode_step"
MODE_PLUGIN_NAME = "mode"

__all__ = [
    "FRAMEWORK", "ensure_dir", "flatten", "get_immediate_subdirectories", "get_logger",
    "get_path_to_collections", "get_path_to_events_directory", "is_s3", "load_json_as_dict",
    "make_numpy_array", "merge_two_dicts", "remove_file_if_exists", "split",
]


class FRAMEWORK(Enum):
    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"
    MXNET = "mxnet"
    XGBOOST = "xgboost"


def get_logger(name="smdebug"):
    """trainscope's logger ("trainscope"); `name` is accepted for smdebug's signature."""
    return logging.getLogger("trainscope")


def ensure_dir(file_path, is_file=True):
    """Creates the folder of `file_path` (or `file_path` itself if not is_file)."""
    directory = os.path.dirname(file_path) if is_file else file_path
    if directory:
        os.makedirs(directory, exist_ok=True)


def load_json_as_dict(s):
    """A dict from a JSON string or a dict; None for None or "None"."""
    if s is None or s == "None":
        return None
    if isinstance(s, str):
        return json.loads(s)
    if isinstance(s, dict):
        return s
    raise SMDebugValueError("parameter must be either str or dict")


def flatten(lis):
    """A nested list flattened, in order."""
    out = []
    for item in lis:
        out.extend(flatten(item) if isinstance(item, list) else [item])
    return out


def split(comma_separated_string):
    """'a, b,c d' -> ['a', 'b', 'c d']."""
    return [x.strip() for x in comma_separated_string.split(",")]


def merge_two_dicts(x, y):
    """x updated with y (y wins), as a new dict."""
    return {**x, **y}


def get_immediate_subdirectories(a_dir):
    return [n for n in os.listdir(a_dir) if os.path.isdir(os.path.join(a_dir, n))]


def is_s3(path):
    """(True, bucket, key) for an s3:// URL, else (False, None, None)."""
    if not path.startswith("s3://"):
        return False, None, None
    bucket, _, key = path[len("s3://"):].partition("/")
    return True, bucket, key


def get_path_to_events_directory(path):
    return os.path.join(path, "events", "")


def get_path_to_collections(directory):
    """The folder of a trial's collections files, with a trailing separator."""
    return os.path.join(directory, "collections", "000000000", "")


def remove_file_if_exists(file_path):
    if os.path.exists(file_path):
        os.remove(file_path)


def make_numpy_array(x):
    """A numpy array for a numpy array, a Python/numpy scalar, a tuple or a list (strings keep
    their type); other types raise SMDebugTypeError."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, (tuple, list)):
        return np.asarray(x)
    if isinstance(x, dict):
        return np.array(x)
    raise SMDebugTypeError(f"_make_numpy_array only accepts array-like values, not {type(x)}")
