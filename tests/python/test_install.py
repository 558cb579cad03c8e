"""The installed C++ package: `cmake --install` of the build tree into a temporary prefix, the
README's C++ example (examples/cpp) built out of the tree against it, with find_package and with
pkg-config, run, and the trial it wrote read back with the Python package.

Uses the C++ build in $TRAINSCOPE_BUILD_DIR (else <repo>/build), whose libraries must be built
(`cmake --build build`); without one the tests are skipped.
"""

import os
import pathlib
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

import trainscope

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))
EXAMPLE = REPO / "examples" / "cpp"
MODULES = ["core", "store", "capture", "profiler", "rules", "actions", "supervisor"]
CXX = os.environ.get("CXX") or shutil.which("c++") or "c++"


def run(cmd, **kwargs):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """The package installed from the build tree into a fresh prefix."""
    if not (BUILD / "CMakeCache.txt").is_file() or shutil.which("cmake") is None:
        pytest.skip(f"no C++ build in {BUILD} (set TRAINSCOPE_BUILD_DIR)")
    if not all((BUILD / "src" / f"libts_{m}.a").is_file() for m in MODULES):
        pytest.skip(f"the libraries in {BUILD}/src are not built (cmake --build {BUILD})")
    prefix = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", str(BUILD), "--prefix", str(prefix),
         "--component", "trainscope_dev"])
    if not any(prefix.glob("**/trainscopeConfig.cmake")):
        pytest.fail(f"{BUILD} was configured without the install rules (component trainscope_dev): "
                    f"run cmake -S {REPO} -B {BUILD} again")
    return prefix


def check_program(program, trial_dir):
    """Runs the example and checks its output and the trial it wrote."""
    proc = run([str(program), str(trial_dir)])
    assert proc.stdout.splitlines() == [
        "step 0: Net_fc1.weight = [1, 2, 3, 4]",
        "step 1: Net_fc1.weight = [2, 2, 3, 4]",
        "step 2: Net_fc1.weight = [3, 2, 3, 4]",
    ]
    trial = trainscope.create_trial(str(trial_dir))
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor_names(collection="weights") == ["Net_fc1.weight"]
    value = trial.tensor("Net_fc1.weight").value(2)
    assert value.shape == (2, 2) and value.tolist() == [[3.0, 2.0], [3.0, 4.0]]
    assert (trial_dir / "training_job_end.ts").is_file()

    # A failing call is reported with its Status and exit code 1 (no exception escapes).
    blocker = trial_dir.parent / f"{trial_dir.name}_file"
    blocker.write_text("not a folder")
    proc = subprocess.run([str(program), str(blocker / "run")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("write_and_read: IOError: ") and str(blocker) in proc.stderr


def test_installed_files(prefix):
    lib = next(prefix.glob("**/libts_core.a")).parent
    for m in MODULES:
        assert (lib / f"libts_{m}.a").is_file()
    assert (lib / "cmake" / "trainscope" / "trainscopeConfig.cmake").is_file()
    assert (lib / "pkgconfig" / "trainscope.pc").is_file()
    installed = sorted(p.name for p in (prefix / "include" / "trainscope").iterdir())
    # Every installed module's public headers (src/<module>/include/trainscope/); the LibTorch
    # module (torch_hook.h needs LibTorch) is not part of the package.
    sources = sorted(p.name for m in MODULES
                     for p in (REPO / "src" / m / "include" / "trainscope").glob("*.h"))
    assert installed == sources


def test_installed_headers_compile_alone(prefix, tmp_path):
    """Each installed header compiles on its own against the prefix (it includes the trainscope
    headers it needs), and includes only trainscope's headers and the standard library's (no
    third-party header: design.md). The standard headers come precompiled, to keep this fast."""
    include = prefix / "include"
    headers = sorted((include / "trainscope").iterdir())
    std_headers = set()
    for header in headers:
        for line in header.read_text().splitlines():
            m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
            if m:
                name = m.group(2)
                assert name.startswith("trainscope/") or (m.group(1) == "<" and "/" not in name), \
                    f"{header.name} includes {name}"
                if m.group(1) == "<":
                    std_headers.add(name)
    flags = ["-std=c++20", "-Wall", "-Wextra", "-Werror"]
    pch = tmp_path / "std.h"
    pch.write_text("".join(f"#include <{h}>\n" for h in sorted(std_headers)))
    run([CXX, *flags, "-x", "c++-header", str(pch), "-o", f"{pch}.gch"])

    def compile_one(header):
        return subprocess.run(
            [CXX, *flags, "-Winvalid-pch", "-fsyntax-only", "-include", str(pch), "-I",
             str(include), "-x", "c++", "-"],
            input=f'#include "trainscope/{header.name}"\n', capture_output=True, text=True,
            timeout=120)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for header, proc in zip(headers, pool.map(compile_one, headers)):
            assert proc.returncode == 0, f"{header.name}:\n{proc.stderr}"


def test_example_builds_with_find_package(prefix, tmp_path):
    build = tmp_path / "build"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(["cmake", "-S", str(EXAMPLE), "-B", str(build), *gen, f"-DCMAKE_PREFIX_PATH={prefix}",
         f"-DCMAKE_CXX_COMPILER={CXX}"])
    run(["cmake", "--build", str(build)])
    check_program(build / "write_and_read", tmp_path / "run1")


def test_example_builds_with_pkg_config(prefix, tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.skip("no pkg-config")
    pc_dir = next(prefix.glob("**/pkgconfig/trainscope.pc")).parent
    env = dict(os.environ, PKG_CONFIG_PATH=str(pc_dir))
    flags = run(["pkg-config", "--cflags", "--libs", "trainscope"], env=env).stdout.split()
    # trainscope.pc finds the prefix from its own folder (not the configured install prefix).
    include = next(f[2:] for f in flags if f.startswith("-I") and f.endswith("include"))
    assert pathlib.Path(include).resolve() == (prefix / "include").resolve()
    program = tmp_path / "write_and_read"
    run([CXX, "-std=c++20", "-Wall", "-Wextra", "-Werror", str(EXAMPLE / "write_and_read.cc"),
         "-o", str(program), *flags])
    check_program(program, tmp_path / "run1")


def test_readme_cpp_example_is_the_example_file():
    """The README's C++ API block is examples/cpp/write_and_read.cc between its readme markers."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## C++ API\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```cpp\n(.*?)```", section, re.S).group(1)
    source = (EXAMPLE / "write_and_read.cc").read_text()
    region = re.search(r"// \[readme-begin\]\n(.*?)// \[readme-end\]\n", source, re.S).group(1)
    assert block == region
