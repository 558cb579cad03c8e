"""pytest set-up for the Python tests of trainscope.

trainscope is imported as installed (`pip install .`), or, when it is not installed, from the
source tree's python/ folder, where the development build puts the extension
(`cmake -S . -B build -DTRAINSCOPE_BUILD_PYTHON=ON && cmake --build build --target _core`).
"""

import importlib.util
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if importlib.util.find_spec("trainscope") is None:
    sys.path.insert(0, os.path.join(REPO, "python"))

FIXTURES = os.path.join(REPO, "tests", "data", "smdebug")

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")


def write_trial(path, steps, collections=None, worker="worker_0", num_workers=1, end=True, **opts):
    """Writes a trial with trainscope._core.TrialWriter.

    steps: [(global_step, mode, mode_step, {name: value})]; collections: list of Collection
    (default: one collection "all" listing every tensor name).
    """
    from trainscope import _core
    from trainscope.collection import Collection, collections_file_json

    w = _core.TrialWriter(str(path), worker=worker, write_end_marker=end, **opts)
    names = set()
    for global_step, mode, mode_step, tensors in steps:
        w.begin_step(global_step, mode, mode_step)
        for name, value in tensors.items():
            w.add_tensor(name, value)
            names.add(name)
        w.end_step()
    if collections is None:
        collections = [Collection("all", include_regex=[".*"], tensor_names=sorted(names))]
    w.write_collections(collections_file_json(collections, num_workers))
    w.close()
    assert w.first_error() is None
    return str(path)


@pytest.fixture
def trial_dir(tmp_path):
    return tmp_path / "trial"
