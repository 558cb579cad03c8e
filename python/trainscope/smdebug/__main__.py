"""python -m trainscope.smdebug [--force] (SCRIPT | -m MODULE) [ARGS...]

Runs a script (or a module, as ``python -m`` would) written for smdebug with `import smdebug...`
resolved to trainscope. The script sees ``sys.argv == [SCRIPT, *ARGS]`` and runs as __main__.
Exit status 2 with a message if a real smdebug is installed and --force is not given.
The Python processes the script starts get the alias too (through trainscope's bootstrap, as
under `trainscope run`).
"""

import os
import runpy
import sys

from . import ENV_VAR, install

USAGE = "usage: python -m trainscope.smdebug [--force] (SCRIPT | -m MODULE) [ARGS...]"


def _alias_child_processes(force):
    """Python processes the script starts (multiprocessing's spawn, torch.distributed workers)
    get the alias too: TRAINSCOPE_SMDEBUG_ALIAS for them, and trainscope's bootstrap folder
    (trainscope/auto/boot, the one `trainscope run` uses) first on their PYTHONPATH; its
    sitecustomize installs the alias at their first `import smdebug`."""
    os.environ[ENV_VAR] = "force" if force else os.environ.get(ENV_VAR) or "1"
    boot = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "auto", "boot")
    if not os.path.isfile(os.path.join(boot, "sitecustomize.py")):
        return
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if boot not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([boot, *paths])


def main(argv):
    force = False
    args = list(argv)
    while args and args[0] in ("--force", "-h", "--help"):
        if args[0] == "--force":
            force = True
            args.pop(0)
        else:
            print(USAGE)
            print(__doc__.split("\n", 2)[2].strip())
            return 0
    module = None
    if args and args[0] == "-m":
        if len(args) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        module, args = args[1], args[2:]
    elif not args:
        print(USAGE, file=sys.stderr)
        return 2
    if not install(force=force or None):
        print("trainscope.smdebug: a real smdebug is installed; pass --force to run with "
              "trainscope's alias instead (or uninstall smdebug)", file=sys.stderr)
        return 2
    _alias_child_processes(force)
    if module is not None:
        sys.argv = [module, *args]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    script = args[0]
    if not os.path.exists(script):
        print(f"trainscope.smdebug: can't open file {script!r}: no such file", file=sys.stderr)
        return 2
    sys.argv = list(args)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
