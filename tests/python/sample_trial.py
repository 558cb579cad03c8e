"""Helpers for the store oracle tests: find and run the C++ tool that writes a sample trial, and
recompute the tool's values independently (see tests/store/tools/write_sample_trial.cc)."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

# (global step, mode name, mode step) as the tool writes them.
STEPS = [(0, "TRAIN", 0), (2, "TRAIN", 1), (4, "TRAIN", 2), (6, "EVAL", 0)]
NUMERIC = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128"]
SHAPE = (2, 3, 4)


def tool_path():
    candidates = []
    if os.environ.get("TRAINSCOPE_BUILD_DIR"):
        candidates.append(pathlib.Path(os.environ["TRAINSCOPE_BUILD_DIR"]) / "bin")
    candidates += sorted(REPO.glob("build*/bin"))
    for c in candidates:
        exe = c / "write_sample_trial"
        if exe.exists():
            return exe
    pytest.skip("write_sample_trial not built: build the C++ tests (cmake --build build) or set "
                "TRAINSCOPE_BUILD_DIR")


def write_sample(out_dir):
    subprocess.run([str(tool_path()), str(out_dir)], check=True)
    return out_dir


def _r(n, step):
    i = np.arange(n, dtype=np.int64)
    return (37 * i + 3 * step + 1) % 201


def expected(dtype, step, shape=SHAPE):
    """The tool's values as a numpy array (bfloat16 as float32, which holds them exactly)."""
    n = int(np.prod(shape))
    r = _r(n, step)
    f = (r - 100) * 0.25
    if dtype in ("float16", "float32", "float64"):
        out = f.astype(dtype)
    elif dtype == "bfloat16":
        out = f.astype(np.float32)
    elif dtype.startswith("int"):
        out = (r - 100).astype(dtype)
    elif dtype.startswith("uint"):
        out = r.astype(dtype)
    elif dtype == "bool":
        out = (r % 2).astype(bool)
    else:
        out = (f - 2j * f).astype(dtype)
    return out.reshape(shape)


def strings():
    return ["s%d_\u00e9" % i for i in range(3)]


# TF DataType enum -> numpy dtype for decoding tensor_content (bf16 handled apart).
TF_TO_NUMPY = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
               8: "complex64", 9: "int64", 10: "bool", 17: "uint16", 18: "complex128",
               19: "float16", 22: "uint32", 23: "uint64"}
TF_BFLOAT16 = 14


def decode_content(tf_dtype, content, shape):
    if tf_dtype == TF_BFLOAT16:
        bits = np.frombuffer(content, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(content, dtype=TF_TO_NUMPY[tf_dtype]).reshape(shape)
