"""scripts/check-layers.py, the module order of design.md over every #include: the checkout
keeps it, and a tree with an include that breaks it (a lower module reaching up, a module
reaching into another's private header) fails naming the file, the line and why."""

import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check-layers.py"


def check(root):
    return subprocess.run([sys.executable, str(SCRIPT), "--json", "--root", str(root)],
                          capture_output=True, text=True, timeout=120)


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_checkout_keeps_the_order():
    p = check(REPO)
    assert p.returncode == 0, p.stdout
    assert json.loads(p.stdout)["files"] > 200


def test_an_include_against_the_order_fails_naming_it(tmp_path):
    write(tmp_path, "src/core/include/trainscope/status.h", "#pragma once\n")
    write(tmp_path, "src/core/private_util.h", "#pragma once\n")
    write(tmp_path, "src/rules/include/trainscope/rule.h", '#include "trainscope/status.h"\n')
    write(tmp_path, "src/store/writer.cc", '#include "trainscope/status.h"\n')
    write(tmp_path, "tests/store/writer_test.cc", '#include "trainscope/rule.h"\n')
    assert check(tmp_path).returncode == 0  # down the order, and a test may integrate

    write(tmp_path, "src/store/writer.cc",
          '#include "trainscope/status.h"\n#include "trainscope/rule.h"\n'
          '#include "core/private_util.h"\n#include <vector>\n')
    p = check(tmp_path)
    assert p.returncode == 1
    got = json.loads(p.stdout)["violations"]
    assert len(got) == 2, got
    assert got[0].startswith("src/store/writer.cc:2: store includes trainscope/rule.h, a public "
                             "header of rules, which is above it"), got
    assert got[1].startswith("src/store/writer.cc:3: store includes core/private_util.h, a "
                             "private header of core"), got


def test_only_the_torch_extension_uses_the_torch_module(tmp_path):
    """python/src/torch/ (trainscope._torch_stats) is built on src/torch; _core's bindings
    (python/src/*.cc) are not, so they may not include src/torch's headers."""
    write(tmp_path, "src/core/include/trainscope/reductions.h", "#pragma once\n")
    write(tmp_path, "src/torch/include/trainscope/torch_stats.h",
          '#include "trainscope/reductions.h"\n')
    write(tmp_path, "src/torch/torch_error.h", "#pragma once\n")
    write(tmp_path, "python/src/torch/torch_stats_py.cc",
          '#include "trainscope/reductions.h"\n#include "trainscope/torch_stats.h"\n')
    write(tmp_path, "python/src/stats_py.cc", '#include "trainscope/reductions.h"\n')
    assert check(tmp_path).returncode == 0

    write(tmp_path, "python/src/stats_py.cc", '#include "trainscope/torch_stats.h"\n')
    write(tmp_path, "python/src/torch/torch_stats_py.cc", '#include "torch/torch_error.h"\n')
    p = check(tmp_path)
    assert p.returncode == 1
    got = json.loads(p.stdout)["violations"]
    assert len(got) == 2, got
    assert got[0].startswith("python/src/stats_py.cc:1: bindings includes trainscope/torch_stats.h"
                             ", a public header of torch"), got
    assert got[1].startswith("python/src/torch/torch_stats_py.cc:1: torch bindings includes "
                             "torch/torch_error.h, a private header of torch"), got
