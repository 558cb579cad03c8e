"""The package surface: version, modes, `trainscope info`, the console script."""

import json
import os
import shutil
import subprocess
import sys

import trainscope
from trainscope import cli, modes
from trainscope.modes import ModeKeys


def test_version_and_modes():
    from trainscope import _core

    assert trainscope.__version__ == _core.__version__
    assert modes.TRAIN is ModeKeys.TRAIN and ModeKeys.GLOBAL.value == 4
    assert [m.value for m in ModeKeys] == [1, 2, 3, 4]
    assert modes.to_mode("train") is ModeKeys.TRAIN and modes.to_mode(2) is ModeKeys.EVAL


def test_info_subcommand(capsys):
    assert cli.main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == trainscope.__version__ and info["extension_loaded"] is True
    assert cli.main(["info"]) == 0
    assert "extension: loaded from" in capsys.readouterr().out


def test_module_entry_point():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [os.path.dirname(os.path.dirname(trainscope.__file__)),
                    env.get("PYTHONPATH")] if p
    )
    out = subprocess.run([sys.executable, "-m", "trainscope", "info"], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"trainscope {trainscope.__version__}")


def test_console_script_when_installed():
    exe = shutil.which("trainscope", path=os.path.dirname(sys.executable))
    if exe is None:
        import pytest

        pytest.skip("trainscope is not pip-installed in this environment (development flow)")
    out = subprocess.run([exe, "info"], capture_output=True, text=True)
    assert out.returncode == 0 and "extension: loaded" in out.stdout
