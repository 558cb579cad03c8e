"""python -m trainscope.auto (SCRIPT | -m MODULE) [ARGS...] | --env

Runs an unmodified PyTorch training script (or module, as ``python -m`` would) in trainscope's
automatic mode: its models, gradients and losses are captured without a hook in it, to the
trial that the JSON hook configuration names (TRAINSCOPE_CONFIG or SMDEBUG_CONFIG_FILE_PATH;
`trainscope run` sets it). The script sees ``sys.argv == [SCRIPT, *ARGS]`` and runs as
__main__. Python processes it starts get the mode too (TRAINSCOPE_AUTO=1 and the boot folder
on PYTHONPATH are set for them).

``--env`` prints the two shell assignments that turn the mode on for launchers that start
Python themselves: ``eval "$(python -m trainscope.auto --env)"; torchrun ... train.py``.
"""

import os
import runpy
import sys

from . import BOOT_DIR, ENV_VAR, install

USAGE = "usage: python -m trainscope.auto (SCRIPT | -m MODULE) [ARGS...] | --env"


def child_environment(environ):
    """The variables that give the automatic mode to the Python processes started with
    `environ`: TRAINSCOPE_AUTO=1 and the boot folder first on PYTHONPATH."""
    path = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != BOOT_DIR]
    return {ENV_VAR: "1", "PYTHONPATH": os.pathsep.join([BOOT_DIR, *path])}


def main(argv):
    args = list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        if args:
            print(__doc__.split("\n", 2)[2].strip())
        return 0 if args else 2
    if args[0] == "--env":
        for key, value in child_environment(os.environ).items():
            print(f"export {key}='{value}'")
        return 0
    module = None
    if args[0] == "-m":
        if len(args) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        module, args = args[1], args[2:]
    elif not os.path.exists(args[0]):
        print(f"trainscope.auto: can't open file {args[0]!r}: no such file", file=sys.stderr)
        return 2
    os.environ.update(child_environment(os.environ))
    install()
    if module is not None:
        sys.argv = [module, *args]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    sys.argv = list(args)
    sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
    runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
