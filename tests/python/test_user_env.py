"""trainscope installed into a user's own virtual environment that already holds another PyTorch
2.x than requirements.lock's (issue 14): a fresh venv gets torch $TRAINSCOPE_USER_TORCH (default
2.14.1) from PyPI, then trainscope from this checkout with pip, and a small training with the hook
runs there and its trial is read back.

What it takes, and why:
- PyPI's Linux torch wheels are CUDA builds (527-555 MB for 2.11-2.15, 900 MB for 2.5-2.10) whose
  dependencies pull about 3 GB of nvidia-* CUDA libraries, and `import torch` fails without
  them even on a machine with no GPU (torch preloads libcublas, libcurand, ... and raises);
  there is no CPU-only torch on PyPI. So the wheel is installed with --no-deps beside its small
  pure-Python dependencies (from PyPI), and the CUDA libraries come from the environment that
  runs this test (its torch's nvidia/ folder, made visible through a .pth file), plus
  nvidia-curand (60 MB), which the suite's torch does not need and older ones do. The torch and
  curand wheels are downloaded once into $TRAINSCOPE_WHEEL_CACHE (default
  ~/.cache/trainscope/wheels, or under $XDG_CACHE_HOME).
- trainscope is built into a wheel from this checkout with the suite's own build folder
  ($TRAINSCOPE_BUILD_DIR, else <repo>/build: `pip wheel --config-settings build-dir=...`, the way
  scripts/setup.sh installs it, so nothing is compiled again), and that wheel is installed in
  the user's venv with its dependencies, as `pip install <checkout>` would (build, then
  install); the package links no part of torch, so the torch it meets is the user's.

Skipped, with the reason, only when the wheels cannot be downloaded (offline) or when the
suite's own torch has no nvidia/ CUDA libraries to lend (a CPU-only torch installed by hand).
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from hook_util import REPO

REPO = pathlib.Path(REPO)
BUILD = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))
USER_TORCH = os.environ.get("TRAINSCOPE_USER_TORCH", "2.14.1")
# The CUDA random-number library of CUDA 13.0 (cuda-toolkit[curand]==13.0.3, which torch 2.13
# and 2.14 require); the suite's torch 2.15 does not load it, so its environment lacks it.
CURAND = "nvidia-curand==10.4.0.35"
# Kept between runs (and checkouts) on one machine: the download is paid once.
CACHE = pathlib.Path(os.environ.get("TRAINSCOPE_WHEEL_CACHE") or pathlib.Path(
    os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache", "trainscope", "wheels"))
# torch's pure-Python dependencies (its METADATA), and numpy for trainscope.
TORCH_DEPS = ["filelock", "typing-extensions", "sympy", "networkx", "jinja2", "fsspec", "numpy"]

TRAIN = textwrap.dedent("""\
    import json, sys
    import torch
    import trainscope.pytorch as ts
    import trainscope

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = ts.Hook(out_dir=sys.argv[1], save_config=ts.SaveConfig(save_interval=2),
                   include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for _ in range(6):
        loss = loss_fn(model(torch.randn(4, 8)), torch.randint(0, 3, (4,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
    trial = trainscope.create_trial(sys.argv[1])
    print(json.dumps({
        "torch": torch.__version__,
        "trainscope": trainscope.__file__,
        "steps": trial.steps(),
        "weights": trial.tensor_names(collection="weights"),
        "gradients": trial.tensor_names(collection="gradients"),
        "losses": trial.tensor_names(collection="losses"),
        "loss_4": float(trial.tensor(trial.tensor_names(collection="losses")[0]).value(4)),
    }))
""")


def user_env():
    """The environment of a user's shell: none of the suite's Python path or venv (pip would
    take the suite's trainscope, on PYTHONPATH, for an installed one)."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_TARGET", "PIP_PREFIX",
            "TRAINSCOPE_CONFIG", "SMDEBUG_CONFIG_FILE_PATH", "TRAINSCOPE_OUT_DIR", "RANK",
            "WORLD_SIZE")
    return {k: v for k, v in os.environ.items() if k not in drop}


def run(cmd, timeout=900, **kwargs):
    kwargs.setdefault("env", user_env())
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          **kwargs)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def pinned_torch():
    m = re.search(r"^torch==(\S+)", (REPO / "requirements.lock").read_text(), re.M)
    return m.group(1) if m else None


def download(spec):
    """The wheel of `spec` from the cache, downloaded into it the first time."""
    name, version = spec.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    found = sorted(CACHE.glob(pattern))
    if not found:
        CACHE.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                               "--only-binary=:all:", "-d", str(CACHE), spec],
                              capture_output=True, text=True, timeout=900)
        found = sorted(CACHE.glob(pattern))
        if proc.returncode != 0 or not found:
            pytest.skip(f"cannot download {spec} from PyPI into {CACHE} (offline?): "
                        f"{proc.stderr.strip()[-300:]}")
    return found[-1]


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory):
    """A fresh venv with torch USER_TORCH and trainscope from this checkout installed by pip."""
    if USER_TORCH == pinned_torch():
        pytest.fail(f"TRAINSCOPE_USER_TORCH={USER_TORCH} is requirements.lock's own torch: "
                    "name another version")
    import torch

    lend = pathlib.Path(torch.__file__).resolve().parent.parent / "nvidia"
    if not lend.is_dir():
        pytest.skip(f"the suite's torch has no CUDA libraries to lend ({lend} is missing)")
    if not (BUILD / "CMakeCache.txt").is_file():
        pytest.skip(f"no configured build in {BUILD} (scripts/setup.sh, or TRAINSCOPE_BUILD_DIR)")
    torch_whl = download(f"torch=={USER_TORCH}")
    curand_whl = download(CURAND)

    root = tmp_path_factory.mktemp("user_env")
    venv = root / "venv"
    # The interpreter under the suite's venv: the wheel built below is for its Python version.
    run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", venv])
    py = venv / "bin" / "python"
    run([py, "-m", "pip", "install", "-q", "--no-compile", "--no-deps", torch_whl, curand_whl])
    run([py, "-m", "pip", "install", "-q", "--no-compile", *TORCH_DEPS])
    (root / "cuda").mkdir()
    (root / "cuda" / "nvidia").symlink_to(lend)
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    # Last on sys.path: the venv's own packages (torch, curand) come first.
    pathlib.Path(site, "zz_lent_cuda_libraries.pth").write_text(f"{root / 'cuda'}\n")

    # pip install <checkout>, in its two steps: the wheel built from the checkout with the
    # suite's build folder (its build type; nothing recompiled), installed with its dependencies.
    cache = (BUILD / "CMakeCache.txt").read_text()
    build_type = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", cache, re.M).group(1) or "Release"
    wheels = root / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--config-settings", f"build-dir={BUILD}",
         "--config-settings", f"cmake.build-type={build_type}", "-w", wheels, REPO])
    wheel = next(wheels.glob("trainscope-*.whl"))
    run([py, "-m", "pip", "install", "-q", "--no-compile", wheel])
    return venv


def test_trains_and_reads_back_with_the_users_torch(user_venv, tmp_path):
    py = user_venv / "bin" / "python"
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    proc = run([py, script, tmp_path / "trial"], timeout=600, cwd=tmp_path)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["torch"].split("+")[0] == USER_TORCH
    assert got["trainscope"].startswith(str(user_venv)), got["trainscope"]
    assert got["steps"] == [0, 2, 4]
    assert len(got["weights"]) == 2 and all(w.endswith(".weight") for w in got["weights"])
    assert len(got["gradients"]) == 4, got["gradients"]
    assert got["losses"] and got["loss_4"] > 0
    # The command installed with the package works in the user's venv.
    cli = user_venv / "bin" / "trainscope"
    ls = run([cli, "ls", tmp_path / "trial"], timeout=120)
    assert "gradient/" in ls.stdout, ls.stdout
