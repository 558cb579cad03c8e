"""What every `trainscope run` pays before the training's first step: the `trainscope` command's
Python entry point (which only hands over to the native command) and the automatic mode's boot
import the trainscope package, so importing it must not import the analysis API (numpy and the
trial reader, about a tenth of a second); `from trainscope import create_trial` still works."""

import subprocess
import sys


def _python(code):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_command_entry_point_does_not_import_the_analysis_api():
    out = _python("import sys, trainscope.cli, trainscope.auto\n"
                  "print(sorted(m for m in ('numpy', 'trainscope.trials') if m in sys.modules))")
    assert out.strip() == "[]"


def test_the_analysis_api_is_there_on_first_use():
    out = _python("import sys, trainscope\n"
                  "assert 'create_trial' in dir(trainscope) and 'numpy' not in sys.modules\n"
                  "from trainscope import create_trial\n"
                  "from trainscope.trials import create_trial as direct\n"
                  "assert create_trial is direct and trainscope.create_trial is direct\n"
                  "try:\n"
                  "    trainscope.no_such_name\n"
                  "except AttributeError as e:\n"
                  "    print(e)\n")
    assert out.strip() == "module 'trainscope' has no attribute 'no_such_name'"
