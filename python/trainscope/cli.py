"""The ``trainscope`` command. Subcommands so far: ``info``."""

import argparse
import json
import platform
import sys


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
    parser = argparse.ArgumentParser(prog="trainscope", description="Debug and profile training runs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="print the version and whether the C++ extension loads")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_info)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
