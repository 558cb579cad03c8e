"""Every code example in README.md and docs/ works as written (issue 14), so the manual cannot drift
from the code:

- ```python blocks run, in README order, in one fresh folder (a later example reads the trial an
  earlier one wrote), after examples/pytorch/readme_setup.py, which defines the names the examples
  take as the script's own (`model`, `loss_fn`, `opt`, `loader`). The blocks under one heading
  run in one process, in order (the profiling example's "Reading it back" uses its `hook`).
  Tracebacks name the README's own lines.
- ```cpp blocks are byte-equal to the region between `// [readme-begin]` and `// [readme-end]` of a
  file under examples/ that the build compiles (examples/cpp: tests/python/test_install.py
  builds and runs it against the installed package; examples/libtorch: the LibTorch build).
- ```sh blocks: each command line is either run here (trainscope commands on a trial, and the
  LibTorch example's run) or named in NOT_RUN with the reason; a new command that is neither
  fails this test until it is one or the other.
- ```json blocks (format examples in docs/formats/) parse as JSON or JSON Lines, unless they say
  they are abbreviated (`...`).
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from hook_util import REPO, env
from profiler_util import trainscope_cli

REPO = pathlib.Path(REPO)
BUILD = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))
SETUP = REPO / "examples" / "pytorch" / "readme_setup.py"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.S | re.M)
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)

# sh commands that this test does not run, each with the reason. A pattern matches the start of
# a command (continuation lines joined, comments removed).
NOT_RUN = [
    (r"scripts/run-(main|tests)\.sh$", "the whole set-up from a fresh machine: what CI runs"),
    (r"(TRAINSCOPE_SMDEBUG_ALIAS=1 )?trainscope run .*train\.py",
     "needs the reader's own train.py; `trainscope run` is run on the examples by "
     "test_cli_run.py and tests/training/"),
    (r"python -m trainscope\.smdebug ",
     "needs the reader's own script or tests; the alias is tested by test_smdebug_alias.py"),
    (r"cmake --install build ", "test_install.py installs the build into a temporary prefix"),
    (r"cmake (-S|--build) /?\S*example", "test_install.py builds examples/cpp with find_package"),
    (r"export PKG_CONFIG_PATH=|c\+\+ -std=c\+\+20 examples/cpp/",
     "test_install.py builds examples/cpp with pkg-config"),
    (r"cmake -S \. -B build ", "configures the checkout's own build (scripts/setup.sh does)"),
    (r"python3? -m venv |\. \S+/bin/activate|(python3? -m )?pip install |apt-get install ",
     "installs into an environment: test_user_env.py does it in a fresh virtual environment"),
]
# sh commands run here: trainscope's read-only commands on a trial, and the LibTorch example.
RUN = re.compile(r"(trainscope (ls|status|rules|timeline)\b|build/bin/train_mlp )")


def code_blocks():
    """(file, lang, body, fence line (1-based), heading) of every fenced block in README and
    docs/."""
    out = []
    for path in DOCS:
        text = path.read_text()
        headings = [(m.start(), m.group(1)) for m in HEADING.finditer(text)]
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            heading = next((h for pos, h in reversed(headings) if pos < m.start()), "")
            out.append((path, m.group(1), m.group(2), line, heading))
    return out


BLOCKS = code_blocks()


def rel(path):
    return str(path.relative_to(REPO))


def sh_commands(body):
    """The commands of an sh block: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    cmds = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            cmds.append(line)
    return cmds


def test_every_block_has_a_known_language():
    """Code is labelled with its language; unlabelled blocks are folder layouts, diagrams, byte
    dumps and sample output, which nothing runs."""
    for path, lang, _, line, _ in BLOCKS:
        assert lang in ("python", "cpp", "sh", "json", ""), \
            f"{rel(path)}:{line}: a ``` block of language {lang!r}: this test does not check it"


# --- Python ----------------------------------------------------------------------------------

PY_GROUPS = []  # [(heading, [(path, body, line)])], in file order
for _path, _lang, _body, _line, _heading in BLOCKS:
    if _lang != "python":
        continue
    if PY_GROUPS and PY_GROUPS[-1][0] == (_path, _heading):
        PY_GROUPS[-1][1].append((_path, _body, _line))
    else:
        PY_GROUPS.append(((_path, _heading), [(_path, _body, _line)]))

_RUNNER = (
    "import json, runpy, sys\n"
    "spec = json.load(open(sys.argv[1]))\n"
    "ns = dict(runpy.run_path(spec['setup'], run_name='readme_setup'))\n"
    "ns['__name__'] = '__main__'\n"
    "for b in spec['blocks']:\n"
    "    exec(compile('\\n' * b['line'] + b['body'], b['file'], 'exec'), ns)\n"
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


@pytest.fixture(scope="module")
def run_group(workdir):
    """Runs the Python groups up to and including the one asked for, each once, in order."""
    done = {}

    def run(index):
        for i in range(index + 1):
            if i in done:
                continue
            (path, heading), blocks = PY_GROUPS[i]
            spec = workdir / f"group{i}.json"
            spec.write_text(json.dumps({
                "setup": str(SETUP),
                "blocks": [{"file": str(p), "body": b, "line": line} for p, b, line in blocks],
            }))
            proc = subprocess.run([sys.executable, "-c", _RUNNER, str(spec)], cwd=workdir,
                                  env=env(), capture_output=True, text=True, timeout=300)
            done[i] = proc
        proc = done[index]
        (path, heading), blocks = PY_GROUPS[index]
        assert proc.returncode == 0, (
            f"the Python example(s) under {heading!r} in {rel(path)} (lines "
            f"{', '.join(str(line + 1) for _, _, line in blocks)}) failed as written:\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
        return proc
    return run


def test_python_examples_are_found():
    headings = [heading for (_, heading), _ in PY_GROUPS]
    # The README's Python examples; a new one joins them by itself.
    for expected in ("Capturing a training (Python)", "Custom rules (Python)",
                     "Reading a trial (Python)", "Profiling"):
        assert expected in headings, f"no Python example under {expected!r} any more"


@pytest.mark.parametrize("index", range(len(PY_GROUPS)),
                         ids=[re.sub(r"\W+", "_", h).strip("_") for (_, h), _ in PY_GROUPS])
def test_python_example_runs(run_group, index):
    run_group(index)


def test_readme_trial_is_what_the_examples_say(run_group, workdir):
    """The capture example's trial has the steps the reading example's comment states."""
    import trainscope

    run_group(len(PY_GROUPS) - 1)
    readme = (REPO / "README.md").read_text()
    m = re.search(r'create_trial\("(runs/\w+)"\)\ntrial\.steps\(\)\s+# (\[[\d, ]*\])', readme)
    assert m, "the README's reading example no longer shows trial.steps() with its result"
    trial = trainscope.create_trial(str(workdir / m.group(1)))
    assert trial.steps() == json.loads(m.group(2))
    assert "Net_fc1.weight" in trial.tensor_names(collection="weights")
    assert (workdir / "runs" / "prof1" / "system").is_dir()


# --- C++ -------------------------------------------------------------------------------------

def readme_regions():
    """{file: region} of every examples/ source with readme markers."""
    out = {}
    for src in sorted((REPO / "examples").rglob("*.cc")):
        m = re.search(r"// \[readme-begin\]\n(.*?)// \[readme-end\]\n", src.read_text(), re.S)
        if m:
            out[src] = m.group(1)
    return out


@pytest.mark.parametrize("path, body, line", [(p, b, line) for p, lang, b, line, _ in BLOCKS
                                              if lang == "cpp"],
                         ids=lambda v: str(v) if isinstance(v, int) else None)
def test_cpp_block_is_a_built_example(path, body, line):
    regions = readme_regions()
    matches = [src for src, region in regions.items() if region == body]
    assert matches, (
        f"{rel(path)}:{line}: this C++ block is not the readme region of any file under "
        f"examples/ ({', '.join(rel(s) for s in regions)}): copy the region into the block")
    src = matches[0]
    cmake = (src.parent / "CMakeLists.txt").read_text()
    assert src.name in cmake, f"{rel(src)} is not built by {rel(src.parent)}/CMakeLists.txt"


# --- sh --------------------------------------------------------------------------------------

SH = [(p, c, line) for p, lang, b, line, _ in BLOCKS if lang == "sh" for c in sh_commands(b)]


def test_every_sh_command_is_run_or_says_why_not():
    for path, cmd, line in SH:
        runs = bool(RUN.match(cmd))
        skipped = [why for pattern, why in NOT_RUN if re.match(pattern, cmd)]
        assert runs or skipped, (
            f"{rel(path)}:{line}: `{cmd}` is neither run by this test nor listed in NOT_RUN "
            "with a reason")


@pytest.mark.parametrize("path, cmd, line", [s for s in SH if RUN.match(s[1])],
                         ids=lambda v: v if isinstance(v, str) and " " in v else None)
def test_sh_command_runs(path, cmd, line, tmp_path):
    cli = trainscope_cli()
    if cli is None:
        pytest.skip("no trainscope command: build it or pip install .")
    if "build/bin/" in cmd:
        exe = re.search(r"build/bin/(\S+)", cmd).group(1)
        if not (BUILD / "bin" / exe).is_file():
            pytest.skip(f"{BUILD}/bin/{exe} is not built (the LibTorch module needs LibTorch)")
    (tmp_path / "build").symlink_to(BUILD)
    bindir = tmp_path / "cli"
    bindir.mkdir()
    (bindir / "trainscope").symlink_to(cli)
    e = env(PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", "-c", f"set -e -o pipefail\n{cmd}"], cwd=tmp_path, env=e,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, \
        f"{rel(path)}:{line}: `{cmd}` failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    if "trainscope ls" in cmd:
        assert "Net_fc1.weight" in proc.stdout, proc.stdout


# --- JSON ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, body, line", [(p, b, line) for p, lang, b, line, _ in BLOCKS
                                              if lang == "json"],
                         ids=lambda v: str(v) if isinstance(v, int) else None)
def test_json_block_parses(path, body, line):
    if "..." in body:
        return  # an abbreviated sketch of a larger document, as it says
    try:
        json.loads(body)
    except json.JSONDecodeError:
        for n, text in enumerate(body.splitlines(), line + 1):
            if text.strip():
                try:
                    json.loads(text)
                except json.JSONDecodeError as e:
                    pytest.fail(f"{rel(path)}:{n}: neither JSON nor JSON Lines: {e}")


def test_no_example_writes_outside_its_folder():
    """Examples use relative folders (runs/...), so running them as written touches no shared
    place such as /tmp/run1."""
    for path, lang, body, line, _ in BLOCKS:
        if lang == "python":
            assert not re.search(r"['\"]/(tmp|path)/", body), f"{rel(path)}:{line}"

