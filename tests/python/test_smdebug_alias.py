"""`import smdebug...` resolved to trainscope (trainscope.smdebug): a script in smdebug's
documented style runs unmodified, the alias modules carry smdebug's names and values, and hold no
logic of their own.

The venv has the real smdebug installed as an oracle, so every run with the alias goes through
`python -m trainscope.smdebug --force` in a subprocess: this process keeps the real smdebug for
the other tests.
"""

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import trainscope.smdebug as alias
from trainscope.smdebug import _finder

HAVE_REAL_SMDEBUG = importlib.util.find_spec("smdebug") is not None and not alias.installed()


def run_aliased(script_text, tmp_path, *args, force=True, extra_env=None, timeout=240):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(script_text))
    env = dict(os.environ)
    for k in ("TRAINSCOPE_CONFIG", "SMDEBUG_CONFIG_FILE_PATH", "TRAINSCOPE_SMDEBUG_ALIAS",
              "RANK", "WORLD_SIZE", "TRAINING_JOB_NAME"):
        env.pop(k, None)
    env["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    import trainscope

    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(trainscope.__file__))
    env.update(extra_env or {})
    cmd = [sys.executable, "-m", "trainscope.smdebug", *(["--force"] if force else []),
           str(script), *map(str, args)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=tmp_path)


def last_json(p):
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout.strip().splitlines()[-1])


# A training script written as smdebug's documentation shows, and its analysis, with no
# trainscope name in it.
DOCUMENTED_SCRIPT = """
    import json, sys
    import torch
    import torch.nn as nn
    import smdebug.pytorch as smd
    from smdebug import modes
    from smdebug.trials import create_trial
    from smdebug.core.config_constants import CONFIG_FILE_PATH_ENV_STR

    out_dir, how = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    if how == "json":
        hook = smd.Hook.create_from_json_file()
    else:
        hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=2),
                        include_collections=["weights", "gradients", "losses"])
    hook.register_module(net)
    hook.register_loss(criterion)
    g = torch.Generator().manual_seed(1)
    hook.set_mode(modes.TRAIN)
    for i in range(6):
        x, y = torch.randn(4, 5, generator=g), torch.randint(0, 3, (4,), generator=g)
        opt.zero_grad()
        loss = criterion(net(x), y)
        hook.save_scalar("loss_value", loss.item())
        loss.backward()
        opt.step()
    hook.set_mode(modes.EVAL)
    with torch.no_grad():
        for i in range(2):
            x, y = torch.randn(4, 5, generator=g), torch.randint(0, 3, (4,), generator=g)
            criterion(net(x), y)
    hook.close()

    trial = create_trial(out_dir)
    import smdebug
    print(json.dumps({
        "smdebug_file": smdebug.__file__,
        "hook_class": type(hook).__module__ + "." + type(hook).__name__,
        "trial_class": type(trial).__module__,
        "env_name": CONFIG_FILE_PATH_ENV_STR,
        "train_steps": trial.steps(mode=modes.TRAIN),
        "eval_steps": trial.steps(mode=modes.EVAL),
        "weights": trial.tensor_names(collection="weights"),
        "gradients": trial.tensor_names(collection="gradients"),
        "losses": trial.tensor_names(collection="losses"),
        "scalar_steps": trial.tensor("scalar/loss_value").steps(mode=modes.TRAIN)
            if trial.has_tensor("scalar/loss_value") else None,
        "w0": trial.tensor("Sequential_0.weight").value(0).shape,
    }))
"""


# What the same script saves under both. Not compared: the steps of save_scalar's values
# (trainscope's hook writes them at every step, smdebug's only at the steps it saves).
COMPARED = ("eval_steps", "weights", "gradients", "losses", "w0")

# Runs a script with the real smdebug, patched for numpy 2 from the outside
# (tests/data/smdebug/smdebug_numpy2_compat.py), as the oracle.
_ORACLE_LAUNCH = (
    "import runpy, sys\n"
    "sys.path.insert(0, sys.argv.pop(1))\n"
    "import smdebug_numpy2_compat; smdebug_numpy2_compat.install()\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def run_oracle(tmp_path, *args, extra_env=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRAINSCOPE_CONFIG", "SMDEBUG_CONFIG_FILE_PATH", "TRAINING_JOB_NAME")}
    env.update(extra_env or {})
    fixtures = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                            "smdebug")
    return subprocess.run([sys.executable, "-c", _ORACLE_LAUNCH, fixtures,
                           str(tmp_path / "script.py"), *map(str, args)],
                          env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)


def _check_documented_run(out, oracle):
    assert out["smdebug_file"].startswith(_finder.ALIAS_DIR)
    assert out["hook_class"] == "trainscope.pytorch.hook.Hook"
    assert out["trial_class"] == "trainscope.trials"
    assert out["env_name"] == "SMDEBUG_CONFIG_FILE_PATH"
    assert out["eval_steps"] == [0]
    assert out["weights"] == ["Sequential_0.weight", "Sequential_2.weight"]
    assert out["losses"] == ["CrossEntropyLoss_output_0"]
    assert out["w0"] == [8, 5]
    if oracle is not None:  # the same script under the real smdebug saves the same
        assert not oracle["smdebug_file"].startswith(_finder.ALIAS_DIR)
        assert {k: out[k] for k in COMPARED} == {k: oracle[k] for k in COMPARED}


def test_documented_script_runs_unmodified_with_hook_out_dir(tmp_path):
    out = last_json(run_aliased(DOCUMENTED_SCRIPT, tmp_path, tmp_path / "run", "hook"))
    oracle = last_json(run_oracle(tmp_path, tmp_path / "sm", "hook")) if HAVE_REAL_SMDEBUG else None
    _check_documented_run(out, oracle)
    assert set(out["scalar_steps"]) >= {0, 2, 4}


def test_documented_script_runs_unmodified_with_json_config(tmp_path):
    def config(name):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({
            "LocalPath": str(tmp_path / name),
            "HookParameters": {"save_interval": "2"},
            "CollectionConfigurations": [{"CollectionName": "weights"},
                                         {"CollectionName": "gradients"},
                                         {"CollectionName": "losses"}],
        }))
        return {"SMDEBUG_CONFIG_FILE_PATH": str(path)}

    out = last_json(run_aliased(DOCUMENTED_SCRIPT, tmp_path, tmp_path / "run", "json",
                                extra_env=config("run")))
    oracle = (last_json(run_oracle(tmp_path, tmp_path / "sm", "json", extra_env=config("sm")))
              if HAVE_REAL_SMDEBUG else None)
    _check_documented_run(out, oracle)


@pytest.mark.skipif(not HAVE_REAL_SMDEBUG, reason="needs a real smdebug installed")
def test_runner_refuses_to_shadow_an_installed_smdebug(tmp_path):
    p = run_aliased("print('ran')\n", tmp_path, force=False)
    assert p.returncode == 2
    assert "ran" not in p.stdout
    assert "a real smdebug is installed" in p.stderr and "--force" in p.stderr
    # The environment variable forces it too (what trainscope run's bootstrap reads).
    p = run_aliased("import smdebug; print(smdebug.__file__)\n", tmp_path, force=False,
                    extra_env={"TRAINSCOPE_SMDEBUG_ALIAS": "force"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().startswith(_finder.ALIAS_DIR)


@pytest.mark.skipif(not HAVE_REAL_SMDEBUG, reason="needs a real smdebug installed")
def test_install_without_force_keeps_the_real_smdebug():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert alias.install(force=False) is False
    assert not alias.installed()
    assert any("a real smdebug is installed" in str(w.message) for w in caught)


def test_install_is_idempotent_uninstall_restores(tmp_path):
    p = run_aliased("""
        import json, sys, importlib
        import trainscope.smdebug as a
        before = len(sys.meta_path)
        assert a.installed() and a.install() and a.install(force=True)
        same = len(sys.meta_path) == before
        import smdebug.core.modes as m
        from trainscope.modes import ModeKeys
        out = {"same": same, "modekeys": m.ModeKeys is ModeKeys}
        try:
            import smdebug.tensorflow
            out["tf"] = "imported"
        except ModuleNotFoundError as e:
            out["tf"] = e.name
        a.uninstall()
        out["after"] = a.installed()
        out["left"] = sorted(n for n in sys.modules if n.startswith("smdebug") and
                             getattr(sys.modules[n], "__file__", "").startswith(
                                 a._finder.ALIAS_DIR))
        print(json.dumps(out))
    """, tmp_path)
    out = last_json(p)
    assert out == {"same": True, "modekeys": True, "tf": "smdebug.tensorflow", "after": False,
                   "left": []}


def test_runner_runs_a_module_with_its_arguments(tmp_path):
    (tmp_path / "mymod.py").write_text(
        "import sys, smdebug.exceptions as e\nprint(sys.argv[1:], e.StepUnavailable.__module__)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), os.path.dirname(os.path.dirname(alias.__file__))]))
    p = subprocess.run([sys.executable, "-m", "trainscope.smdebug", "--force", "-m", "mymod", "a",
                        "--b"], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "['a', '--b'] trainscope.exceptions"


def _alias_files():
    for root, _, files in os.walk(_finder.ALIAS_DIR):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(root, f)


def _module_name(path):
    rel = os.path.relpath(path, _finder.ALIAS_DIR)[: -len(".py")].split(os.sep)
    if rel[-1] == "__init__":
        rel = rel[:-1]
    return ".".join(["smdebug", *rel])


def test_alias_modules_hold_no_logic():
    """Each alias file is a docstring and imports (and names bound to imported names)."""
    files = list(_alias_files())
    assert len(files) >= 30
    for path in files:
        tree = ast.parse(open(path).read(), path)
        for node in tree.body:
            ok = isinstance(node, (ast.Import, ast.ImportFrom)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and node is tree.body[0]) or (  # __all__ = ["name", ...]
                isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] ==
                ["__all__"] and isinstance(node.value, ast.List)
                and all(isinstance(e, ast.Constant) for e in node.value.elts))
            assert ok, f"{path}:{node.lineno}: an alias module only imports trainscope's objects"
            if isinstance(node, ast.ImportFrom):
                assert node.module.startswith("trainscope"), f"{path}: imports {node.module}"


@pytest.mark.skipif(not HAVE_REAL_SMDEBUG, reason="needs a real smdebug installed (the oracle)")
def test_alias_names_exist_in_smdebug_with_its_constant_values(tmp_path):
    """Every public name of every alias module exists in the real smdebug module of that name
    (trainscope's additions listed), and every constant has smdebug's value."""
    p = run_aliased("""
        import json, os, importlib, sys
        from trainscope.smdebug import _finder
        out = {}
        for root, _, files in os.walk(_finder.ALIAS_DIR):
            for f in files:
                if not f.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(root, f), _finder.ALIAS_DIR)[:-3].split(os.sep)
                name = ".".join(["smdebug"] + [r for r in rel if r != "__init__"])
                m = importlib.import_module(name)
                def constant(k, v):
                    if not k.isupper() or not isinstance(v, (int, float, str, list)):
                        return None
                    try:
                        json.dumps(v)
                        return v
                    except TypeError:
                        return None
                out[name] = {k: constant(k, v) for k, v in vars(m).items()
                             if not k.startswith("_") and not isinstance(v, type(os))}
        print(json.dumps(out))
    """, tmp_path)
    aliased = last_json(p)
    # trainscope's additions to smdebug's modules (documented in docs/compat.md).
    additions = {"smdebug.pytorch.collection": {"CollectionManager"},
                 "smdebug.trials": {"Trial"},
                 "smdebug.rules": {"BUILTIN_RULES", "describe_rule", "AllZero", "CheckInputImages",
                                   "ClassImbalance", "Confusion", "DeadRelu", "ExplodingTensor",
                                   "LossNotDecreasing", "NLPSequenceRatio", "Overfit",
                                   "Overtraining", "PoorWeightInitialization",
                                   "SaturatedActivation", "SimilarAcrossRuns",
                                   "StalledTrainingRule", "TensorVariance", "UnchangedTensor",
                                   "VanishingGradient", "WeightUpdateRatio"},
                 "smdebug.exceptions": {"TrainscopeError", "TrialCorruptionError", "TrialIOError",
                                        "TrialNotReady", "TrainingStopped"},
                 "smdebug.profiler": None,  # trainscope's profiler API (docs/compat.md)
                 "smdebug.core.json_config": None,  # the constants json_config imports
                 "smdebug.core.utils": {"training_has_ended", "has_training_ended"}}
    import importlib

    checked_constants = 0
    for name, names in aliased.items():
        try:
            real = importlib.import_module(name)
        except ImportError as e:  # smdebug's notebook charts import Bokeh and IPython
            if e.name not in ("bokeh", "IPython"):
                raise
            real = _top_level_names_of_real_module(name)
        extra = additions.get(name, set())
        for attr, value in names.items():
            if extra is None:
                continue
            if attr not in extra:
                assert hasattr(real, attr), f"{name}.{attr} is not smdebug's"
            if value is not None and hasattr(real, attr):
                assert getattr(real, attr) == value, f"{name}.{attr}"
                checked_constants += 1
    assert checked_constants >= 60
    assert "CONFIG_FILE_PATH_ENV_STR" in aliased["smdebug.core.json_config"]
    assert aliased["smdebug.core.config_constants"]["DEFAULT_COLLECTIONS_FILE_NAME"] == \
        "worker_0_collections.json"


def _top_level_names_of_real_module(name):
    """The names a real smdebug module defines at its top level, read from its source (for a
    module that cannot be imported here), as an object with those attributes (values None)."""
    import types

    import smdebug

    base = os.path.join(os.path.dirname(smdebug.__file__), *name.split(".")[1:])
    path = base + ".py" if os.path.exists(base + ".py") else os.path.join(base, "__init__.py")
    tree = ast.parse(open(path).read(), path)
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return types.SimpleNamespace(**{n: None for n in names})


def test_processes_the_script_starts_get_the_alias(tmp_path):
    p = run_aliased("""
        import json, multiprocessing as mp

        def child(q):
            import smdebug
            q.put(smdebug.__file__)

        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            proc = ctx.Process(target=child, args=(q,))
            proc.start()
            print(json.dumps({"child": q.get(timeout=60)}))
            proc.join()
    """, tmp_path)
    assert last_json(p)["child"].startswith(_finder.ALIAS_DIR)
