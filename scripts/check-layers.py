#!/usr/bin/env python3
"""The module order of design.md, checked over every #include of the C++ sources.

    python3 scripts/check-layers.py [--json] [--root DIR]

Modules, lowest first: core < store < capture < profiler < rules < actions < supervisor < cli;
src/torch and python/src (the bindings) are leaves above every library module. One leaf sits on
another: python/src/torch/ (the extension trainscope._torch_stats, "torch bindings") may use
src/torch's public headers, which the other bindings (trainscope._core) may not. A file of module
M (src/M/..., its public headers in src/M/include/trainscope/) may include:

- "trainscope/<h>" when <h> is a public header of M or of a module below M;
- "M/<h>": M's own private headers; never another module's private header ("core/x.h" from
  capture), which is that module's business (move what two modules share into a public header of
  the lower one);
- <system or third-party headers>: not here (the public-header rule is test_install's).

Tests (tests/<M>/...) may include M's private headers, any public header (a test may drive the
modules above the one it tests, as the hook's stop tests raise the stop signal with the stop
action) and the test helpers of any module (tests/<N>/*.h), but no other module's private header.
Exits 1 naming each offending line (file:line: what it includes, and why it may not), 0 when
every include keeps the order; --json prints {"violations": [...], "files": N}. --root checks
another checkout (default: the one holding this script).
"""

import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORDER = ["core", "store", "capture", "profiler", "rules", "actions", "supervisor", "cli"]
LEAVES = ["torch", "bindings", "torch bindings"]  # above every library module
# The leaves a leaf may use: the torch extension (python/src/torch/) is built on src/torch.
LEAF_USES = {"torch bindings": {"torch"}}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def rank(module):
    if module in ORDER:
        return ORDER.index(module)
    return len(ORDER)  # a leaf


def public_headers():
    """{"trainscope/<name>": owning module} from src/<module>/include/trainscope/."""
    owners = {}
    for header in sorted(ROOT.glob("src/*/include/trainscope/*")):
        owners["trainscope/" + header.name] = header.parts[-4]
    return owners


def module_of(path):
    """(module, is_test) of a source file, or (None, False) for files the check ignores."""
    rel = path.relative_to(ROOT).parts
    if rel[0] == "src" and len(rel) > 2:
        return rel[1], False
    if rel[0] == "python" and rel[1] == "src":
        return ("torch bindings" if len(rel) > 3 and rel[2] == "torch" else "bindings"), False
    if rel[0] == "tests" and len(rel) > 2 and (rel[1] in ORDER or rel[1] in LEAVES):
        return rel[1], True
    return None, False


def check():
    owners = public_headers()
    violations, files = [], 0
    sources = [p for pattern in ("src/**/*", "python/src/**/*", "tests/**/*")
               for p in ROOT.glob(pattern) if p.suffix in (".cc", ".h") and p.is_file()]
    for path in sorted(sources):
        module, is_test = module_of(path)
        if module is None:
            continue
        files += 1
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(1)
            where = f"{path.relative_to(ROOT)}:{lineno}"
            if is_test and (name.startswith("trainscope/") or (ROOT / "tests" / name).is_file()):
                continue
            if name.startswith("trainscope/"):
                owner = owners.get(name)
                if owner is None:
                    violations.append(f"{where}: {name} is no module's public header")
                elif rank(owner) > rank(module) or (
                        owner in LEAVES and owner != module
                        and owner not in LEAF_USES.get(module, ())):
                    violations.append(
                        f"{where}: {module} includes {name}, a public header of {owner}, "
                        f"which is above it ({' < '.join(ORDER)}; torch and the bindings are "
                        "leaves; only the torch bindings use torch)")
                continue
            first = name.split("/", 1)[0]
            if "/" in name and (first in ORDER or first in LEAVES) and first != module:
                violations.append(
                    f"{where}: {module}{' test' if is_test else ''} includes {name}, a private "
                    f"header of {first}: only {first}'s own files may; move what both need "
                    f"into a public header of the lower module")
    return violations, files


def main():
    global ROOT
    args = sys.argv[1:]
    if "--root" in args:
        ROOT = pathlib.Path(args[args.index("--root") + 1]).resolve()
    violations, files = check()
    if "--json" in args:
        print(json.dumps({"violations": violations, "files": files}, indent=2))
    else:
        for v in violations:
            print(v)
        print(f"check-layers: {files} files, {len(violations)} include(s) out of order",
              file=sys.stderr)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
