"""The examples in examples/pytorch train for real (no download) and leave a readable trial."""

import os
import subprocess
import sys

import pytest

import trainscope.pytorch as ts
from hook_util import REPO, env

EXAMPLES = os.path.join(REPO, "examples", "pytorch")


@pytest.mark.parametrize("script, tensor", [
    ("mlp_digits.py", "relu1_output_0"),
    ("cnn_digits.py", "conv2_output_0"),
    ("text_classifier.py", "embedding_output_0"),
])
def test_example_trains_and_captures(tmp_path, script, tensor):
    pytest.importorskip("sklearn")
    out = tmp_path / "trial"
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), "--out", str(out),
                        "--epochs", "1", "--save-interval", "5", "--quiet"],
                       env=env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "test accuracy" in p.stdout
    trial = ts.create_trial(str(out))
    assert trial.steps(mode=ts.modes.TRAIN)[:3] == [0, 5, 10]
    assert tensor in trial.tensor_names()
    assert trial.tensor_names(collection="gradients")
    assert trial.tensor("scalar/test_accuracy").steps()
