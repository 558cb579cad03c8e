"""Helpers of the hook tests: run scripts in subprocesses with trainscope (and smdebug)."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(HERE, "hook_scripts")
FIXTURES = os.path.join(REPO, "tests", "data", "smdebug")

# Runs sys.argv[1] as __main__ with the rest as its arguments, installing smdebug's numpy-2
# patch (tests/data/smdebug/smdebug_numpy2_compat.py) first when its first argument names smdebug.
_LAUNCH = (
    "import runpy, sys\n"
    "sys.argv = sys.argv[1:]\n"
    "if len(sys.argv) > 1 and sys.argv[1].startswith('smdebug'):\n"
    "    import smdebug_numpy2_compat\n"
    "    smdebug_numpy2_compat.install()\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def env(**extra):
    e = dict(os.environ)
    # The trainscope the tests import (installed, or python/ of a development build).
    import trainscope  # noqa: PLC0415

    paths = [os.path.dirname(os.path.dirname(trainscope.__file__)), FIXTURES, SCRIPTS]
    if e.get("PYTHONPATH"):
        paths.append(e["PYTHONPATH"])
    e["PYTHONPATH"] = os.pathsep.join(paths)
    e.setdefault("SMDEBUG_LOG_LEVEL", "error")
    e["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    e.pop("TRAINING_JOB_NAME", None)
    for k in ("TRAINSCOPE_CONFIG", "SMDEBUG_CONFIG_FILE_PATH", "RANK", "WORLD_SIZE"):
        e.pop(k, None)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run_script(script, *args, timeout=240, extra_env=None, check=True):
    """Runs hook_scripts/<script> in a fresh interpreter; returns the CompletedProcess."""
    path = os.path.join(SCRIPTS, script)
    cmd = [sys.executable, "-c", _LAUNCH, path, *map(str, args)]
    p = subprocess.run(cmd, env=env(**(extra_env or {})), capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{script} {args} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def read_trial(which, path):
    p = run_script("read_trial.py", which, path)
    return json.loads(p.stdout.strip().splitlines()[-1])
