"""The ``trainscope`` command.

The command itself is native (src/cli, installed as ``trainscope/bin/trainscope`` in this
package); this entry point runs it with the same arguments. ``trainscope info`` is answered here:
it says whether the Python side (the extension) loads.
"""

import argparse
import json
import os
import platform
import sys
from pathlib import Path


def _info(args):
    from . import __version__
    from ._native import available

    loaded, where = available()
    info = {
        "version": __version__,
        "extension_loaded": loaded,
        ("extension_path" if loaded else "extension_error"): where,
        "python": platform.python_version(),
    }
    try:
        import numpy

        info["numpy"] = numpy.__version__
    except ImportError:
        info["numpy"] = None
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"trainscope {info['version']}")
        print(f"extension: {'loaded from ' + where if loaded else 'NOT loaded: ' + where}")
        print(f"python {info['python']}, numpy {info['numpy']}")
    return 0 if loaded else 1


def build_parser():
    parser = argparse.ArgumentParser(
        prog="trainscope", description="Debug and profile training runs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="print the version and whether the C++ extension loads")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_info)
    return parser


def native_cli():
    """Path of the native ``trainscope`` executable, or None."""
    env = os.environ.get("TRAINSCOPE_NATIVE_CLI")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parent / "bin" / "trainscope")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "info":
        exe = native_cli()
        if exe is None:
            print("trainscope: the native command is not installed with this package "
                  "(reinstall with `pip install .` from a checkout)", file=sys.stderr)
            return 1
        sys.stdout.flush()
        os.execv(str(exe), [str(exe), *argv])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
