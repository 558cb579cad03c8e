"""The small helpers of smdebug.core.utils that scripts and tests call (paths, JSON, S3 URL
splitting), written for trainscope. smdebug.core.utils re-exports them.
"""

import json
import logging
import os
import re
import shutil
from enum import Enum

import numpy as np

from ..exceptions import (SMDebugNotImplementedError, SMDebugRuntimeError, SMDebugTypeError,
                          SMDebugValueError)
from . import constants as _c

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
    "make_numpy_array", "match_inc", "merge_two_dicts", "remove_file_if_exists", "split",
    "is_framework_version_supported", "SagemakerSimulator", "ScriptSimulator",
]  # smdebug.core.utils' names; check_dir_exists and is_sagemaker_job live in other modules


class FRAMEWORK(Enum):
    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"
    MXNET = "mxnet"
    XGBOOST = "xgboost"


def get_logger(name="smdebug"):
    """trainscope's logger ("trainscope"); `name` is accepted for smdebug's signature."""
    return logging.getLogger("trainscope")


def match_inc(tname, include):
    """True when one of the regexes in `include` is found anywhere in `tname` (re.search)."""
    return any(re.search(inc, tname) for inc in include)


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


def is_sagemaker_job():
    """True inside a SageMaker training job (the platform sets TRAINING_JOB_NAME)."""
    return "TRAINING_JOB_NAME" in os.environ


def check_dir_exists(path):
    """True if `path` holds a finished trial (its end marker exists), else False."""
    if str(path).startswith("s3://"):
        raise SMDebugNotImplementedError(f"{path}: s3:// trials are not supported yet")
    return os.path.isfile(os.path.join(str(path), END_OF_JOB_FILENAME))


# smdebug.core.access_layer.file: files appear whole, written as <path>.tmp then renamed; the
# suffix is trainscope's writer's too (trial_format::kTmpSuffix).
SMDEBUG_TEMP_PATH_SUFFIX = ".tmp"


def get_temp_path(file_path):
    """Where a file is written before it is renamed to `file_path`."""
    return file_path + SMDEBUG_TEMP_PATH_SUFFIX


def verify_and_get_out_dir(out_dir):
    """smdebug.core.hook_utils': `out_dir` with ~ expanded; SMDebugRuntimeError when it already
    holds a finished trial, which the hook refuses too (a new job must not mix its tensors with
    an old job's)."""
    if out_dir is None:
        raise RuntimeError("out_dir is a required argument")
    out_dir = os.path.expanduser(str(out_dir))
    if check_dir_exists(out_dir):
        raise SMDebugRuntimeError(
            f"out_dir {out_dir} already holds a finished trial (it has {END_OF_JOB_FILENAME}): "
            "choose a new out_dir, or delete the old trial first")
    return out_dir


def reset_config_validator():
    """smdebug.core.config_validator's: smdebug caches whether its hook may run (framework
    version, SageMaker settings) and this forgets it. trainscope caches no such verdict (its hook
    runs with the torch it is installed with), so there is nothing to forget."""


def is_framework_version_supported(framework_type):
    """True if the framework's hook can run here: PyTorch when torch imports (trainscope
    supports the torch it is installed with); other frameworks have no trainscope hook."""
    if framework_type == FRAMEWORK.PYTORCH:
        try:
            import torch  # noqa: F401
        except ImportError:
            return False
        return True
    if isinstance(framework_type, FRAMEWORK):
        return False
    raise SMDebugNotImplementedError(f"No such framework type {framework_type}")


class SagemakerSimulator:
    """Makes this process look like a SageMaker training job while inside the `with` block:
    writes the hook's JSON configuration (json_file_contents) to json_config_path and
    SageMaker's TensorBoard configuration, and sets SMDEBUG_CONFIG_FILE_PATH,
    TENSORBOARD_CONFIG_FILE_PATH and TRAINING_JOB_NAME; with cleanup, removes the trial folder
    (/opt/ml/output/tensors) first and the files and variables after."""

    def __init__(self, json_config_path="/tmp/zcc_config.json", tensorboard_dir="/tmp/tensorboard",
                 training_job_name="sm_job", json_file_contents="{}", enable_tb=True, cleanup=True):
        self.out_dir = _c.DEFAULT_SAGEMAKER_OUTDIR
        self.json_config_path = json_config_path
        self.tb_json_config_path = _c.DEFAULT_SAGEMAKER_TENSORBOARD_PATH
        self.tensorboard_dir = tensorboard_dir
        self.training_job_name = training_job_name
        self.json_file_contents = json_file_contents
        self.enable_tb = enable_tb
        self.cleanup = cleanup

    def __enter__(self):
        if self.cleanup:
            shutil.rmtree(self.out_dir, ignore_errors=True)
        remove_file_if_exists(self.json_config_path)
        os.environ[_c.CONFIG_FILE_PATH_ENV_STR] = self.json_config_path
        os.environ["TRAINING_JOB_NAME"] = self.training_job_name
        ensure_dir(self.json_config_path)
        with open(self.json_config_path, "w") as f:
            f.write(self.json_file_contents)
        if self.enable_tb:
            os.environ[_c.TENSORBOARD_CONFIG_FILE_PATH_ENV_STR] = self.tb_json_config_path
            ensure_dir(self.tb_json_config_path)
            with open(self.tb_json_config_path, "w") as f:
                json.dump({"LocalPath": self.tensorboard_dir}, f)
        return self

    def __exit__(self, *exc):
        if not self.cleanup:
            return
        remove_file_if_exists(self.json_config_path)
        if self.enable_tb:
            remove_file_if_exists(self.tb_json_config_path)
        for var in (_c.CONFIG_FILE_PATH_ENV_STR, "TRAINING_JOB_NAME",
                    _c.TENSORBOARD_CONFIG_FILE_PATH_ENV_STR):
            os.environ.pop(var, None)


class ScriptSimulator:
    """Removes out_dir (and tensorboard_dir) before and after the `with` block."""

    def __init__(self, out_dir="/tmp/test", tensorboard_dir=None):
        self.out_dir = out_dir
        self.tensorboard_dir = tensorboard_dir

    def _clean(self):
        for d in (self.out_dir, self.tensorboard_dir):
            if d:
                shutil.rmtree(d, ignore_errors=True)

    def __enter__(self):
        self._clean()
        return self

    def __exit__(self, *exc):
        self._clean()
