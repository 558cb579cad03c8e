"""The automatic mode end to end: unmodified PyTorch trainings (tests/training/auto_programs/,
none of them mentions trainscope) under the real `trainscope run --rules default`.

For each: the training ends well, every tensor rule of the default set evaluates real data (no
Error, steps evaluated), and the trial holds what the rules read, with smdebug's names, one
trial step per optimizer step (per iteration with two optimizers). One planted problem (an
absurd learning rate) is caught by ExplodingTensor. The frameworks that drive the loop
themselves (Hugging Face's Trainer through accelerate, Lightning with its optimizer closure) are
healthy trainings: no tensor rule may find anything in them.
"""

import json
import os
import re
import pathlib
import subprocess
import sys

import pytest

from profiler_util import raw_events, trainscope_cli

REPO = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "training" / "auto_programs"
CLI = trainscope_cli()
pytestmark = pytest.mark.skipif(CLI is None,
                                reason="no trainscope command: build it or pip install .")

TENSOR_RULES = ("ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "DeadRelu",
                "SaturatedActivation", "WeightUpdateRatio", "PoorWeightInitialization")
SAVE_INTERVAL = 5


def _env():
    """The training imports the trainscope these tests import, and the command (the build's
    or the installed one) uses its boot folder."""
    import trainscope
    import trainscope.auto

    env = dict(os.environ)
    env.pop("TRAINSCOPE_AUTO", None)
    pkg_parent = str(pathlib.Path(trainscope.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    env["TRAINSCOPE_AUTO_BOOT"] = trainscope.auto.BOOT_DIR
    env["OMP_NUM_THREADS"] = "1"
    return env


def run_auto(tmp_path, command, *options, env=None, timeout=300, save_interval=SAVE_INTERVAL):
    """`command` under `trainscope run --rules default`; save_interval None: the rules' own
    schedules (every step for the losses)."""
    trial = tmp_path / "trial"
    interval = [] if save_interval is None else ["--save-interval", str(save_interval)]
    argv = [CLI, "run", "--out", str(trial), "--rules", "default", "--no-system", *interval,
            *options, "--", *command]
    p = subprocess.run(argv, env=env or _env(), capture_output=True, text=True, timeout=timeout)
    return p, trial


_STATUS_LINE = re.compile(r"^trainscope: \w+: (InProgress|NoIssuesFound|IssuesFound)$")


def why(p):
    """The end of a run's stderr without the rules' status lines, for an assertion's message:
    what a crashed rank printed (an abort's reason, a traceback) stays in view."""
    lines = [ln for ln in p.stderr.splitlines() if not _STATUS_LINE.match(ln)]
    return "\n".join(lines)[-4000:]


def statuses(trial):
    out = {}
    for rule in TENSOR_RULES:
        out[rule] = json.loads((trial / "rule-output" / rule / "status.json").read_text())
    return out


def assert_rules_evaluated(p, trial):
    got = statuses(trial)
    for rule, s in got.items():
        assert s["status"] in ("NoIssuesFound", "IssuesFound"), (rule, s, why(p))
        assert s["steps_evaluated"] > 0, (rule, s)
    return got


def python(program, *args):
    return [sys.executable, str(PROGRAMS / program), *args]


def two_ranks(program, *args):
    """`program` under torchrun with 2 processes on this machine (skips without torchrun)."""
    torchrun = pathlib.Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("no torchrun beside this Python")
    return [str(torchrun), "--standalone", "--nproc_per_node", "2", str(PROGRAMS / program),
            *args]


def trial_of(path):
    from trainscope import create_trial

    return create_trial(str(path))


def train_steps(trial):
    from trainscope import modes

    return trial.steps(mode=modes.TRAIN)


def test_plain_loop(tmp_path):
    from trainscope import modes

    p, path = run_auto(tmp_path, python("plain_loop.py", "--steps", "40"))
    assert p.returncode == 0, why(p)
    assert_rules_evaluated(p, path)
    t = trial_of(path)
    # One trial step per optimizer step: 40 steps, every 5th saved.
    assert train_steps(t) == list(range(0, 40, SAVE_INTERVAL))
    # One call of the model a step: no meta.model_calls (index.md), in TRAIN steps or EVAL ones.
    assert [t.model_calls(s) for s in t.steps()] == [0] * len(t.steps())
    # No reinforcement-learning library imported: no _meta.environments (trial.md).
    (collections,) = (path / "collections" / "000000000").glob("*_collections.json")
    assert "environments" not in json.loads(collections.read_text())["_meta"]
    names = set(t.tensor_names())
    assert {"Net_fc1.weight", "Net_out.weight", "gradient/Net_fc1.weight",
            "gradient/Net_out.bias", "CrossEntropyLoss_output_0"} <= names, sorted(names)
    assert "Net_fc1.weight" in t.tensor_names(collection="weights")
    assert "gradient/Net_fc2.weight" in t.tensor_names(collection="gradients")
    assert "CrossEntropyLoss_output_0" in t.tensor_names(collection="losses")
    assert t.tensor_names(collection="relu_output"), "DeadRelu's ReLU outputs"
    assert t.tensor_names(collection="saturated_activation_inputs"), "tanh inputs"
    # The loss module's output is the tensor backward() ran on: saved once, not twice.
    assert not [n for n in names if n.startswith("loss_output")], sorted(names)
    # The validation passes (model.eval(), no_grad) are EVAL steps.
    assert t.steps(mode=modes.EVAL), t.steps()
    loss = t.tensor("CrossEntropyLoss_output_0")
    first, last = loss.value(5, mode=modes.TRAIN), loss.value(35, mode=modes.TRAIN)
    assert float(last) < float(first)
    # Step 0 holds the initial weights: the gradient of step 0 is the first update's.
    assert (t.tensor("Net_fc1.weight").value(0, mode=modes.TRAIN) !=
            t.tensor("Net_fc1.weight").value(5, mode=modes.TRAIN)).any()


def test_planted_nan_is_caught(tmp_path):
    p, path = run_auto(tmp_path, python("plain_loop.py", "--steps", "40", "--lr", "1e38"))
    got = statuses(path)
    assert got["ExplodingTensor"]["status"] == "IssuesFound", (got["ExplodingTensor"],
                                                               p.stderr[-2000:])


def test_gradient_accumulation(tmp_path):
    from trainscope import modes

    p, path = run_auto(tmp_path, python("grad_accum.py", "--steps", "30"))
    assert p.returncode == 0, why(p)
    assert_rules_evaluated(p, path)
    t = trial_of(path)
    assert train_steps(t) == list(range(0, 30, SAVE_INTERVAL))  # not one per micro-batch
    names = set(t.tensor_names())
    assert {"Sequential_0.weight", "gradient/Sequential_0.weight", "loss_output_0",
            "loss_output_3"} <= names, sorted(names)
    assert "loss_output_4" not in names  # 4 micro-batches a step
    assert set(t.tensor_names(collection="losses")) >= {"loss_output_0", "loss_output_3"}
    assert t.tensor("gradient/Sequential_0.weight").steps(mode=modes.TRAIN) == train_steps(t)


def test_two_optimizers_gan(tmp_path):
    p, path = run_auto(tmp_path, python("tiny_gan.py", "--steps", "30"))
    assert p.returncode == 0, why(p)
    assert_rules_evaluated(p, path)
    t = trial_of(path)
    assert train_steps(t) == list(range(0, 30, SAVE_INTERVAL))  # one step per iteration
    names = set(t.tensor_names())
    assert {"Generator_net.0.weight", "Discriminator_net.0.weight",
            "gradient/Generator_net.2.weight", "gradient/Discriminator_net.2.bias",
            "BCELoss_output_0", "BCELoss_output_2"} <= names, sorted(names)


def test_bf16_autocast(tmp_path):
    p, path = run_auto(tmp_path, python("bf16_autocast.py", "--steps", "30"))
    assert p.returncode == 0, why(p)
    assert_rules_evaluated(p, path)
    t = trial_of(path)
    assert train_steps(t) == list(range(0, 30, SAVE_INTERVAL))
    assert {"Sequential_0.weight", "gradient/Sequential_4.weight",
            "CrossEntropyLoss_output_0"} <= set(t.tensor_names())


def test_torch_compile(tmp_path):
    p, path = run_auto(tmp_path, python("compiled_model.py", "--steps", "30"))
    assert p.returncode == 0, why(p)
    got = statuses(path)
    t = trial_of(path)
    assert train_steps(t) == list(range(0, 30, SAVE_INTERVAL))
    names = set(t.tensor_names())
    # Names of the plain model (the compile wrapper is looked through).
    assert {"Sequential_0.weight", "gradient/Sequential_0.weight",
            "CrossEntropyLoss_output_0"} <= names, sorted(names)
    # Inside a compiled graph no module hook runs: no activations, so the activation rules
    # have nothing to judge; the others evaluate real data.
    for rule in ("ExplodingTensor", "VanishingGradient", "LossNotDecreasing",
                 "WeightUpdateRatio", "PoorWeightInitialization"):
        assert got[rule]["status"] in ("NoIssuesFound", "IssuesFound"), (rule, got[rule])
        assert got[rule]["steps_evaluated"] > 0, (rule, got[rule])


def test_ddp_two_ranks_gloo(tmp_path):
    # Every rank writes: trainscope run asks for include_workers "all" (smdebug's default,
    # "one", would keep rank 0's only).
    p, path = run_auto(tmp_path, two_ranks("ddp_gloo.py", "--steps", "30"))
    assert p.returncode == 0, why(p)
    assert_rules_evaluated(p, path)
    t = trial_of(path)
    assert sorted(t.workers()) == ["worker_0", "worker_1"], t.workers()
    assert train_steps(t) == list(range(0, 30, SAVE_INTERVAL))
    names = set(t.tensor_names())
    assert {"Sequential_0.weight", "gradient/Sequential_0.weight",
            "CrossEntropyLoss_output_0"} <= names, sorted(names)
    assert not [n for n in names if "module." in n]


def test_fsdp_two_ranks_gloo(tmp_path):
    """FSDP on the CPU over gloo: the wrapper is looked through (the names are the plain
    model's, as with DDP), every rank writes, and each saves its shard of each parameter
    (flattened, as FSDP holds it): the ranks' shards of a weight add up to the whole of it."""
    from trainscope import modes

    p, path = run_auto(tmp_path, two_ranks("fsdp_gloo.py", "--steps", "30"))
    assert p.returncode == 0, why(p)
    assert_no_finding(p, path)
    t = trial_of(path)
    assert sorted(t.workers()) == ["worker_0", "worker_1"], t.workers()
    assert train_steps(t) == list(range(0, 30, SAVE_INTERVAL))
    names = set(t.tensor_names())
    assert {"Sequential_0.weight", "Sequential_2.weight", "gradient/Sequential_4.bias",
            "CrossEntropyLoss_output_0", "1_output_0"} <= names, sorted(names)
    assert not [n for n in names if "fsdp" in n.lower()], sorted(names)
    for weight, numel in (("Sequential_0.weight", 16 * 32), ("Sequential_2.weight", 32 * 16)):
        tensor, total = t.tensor(weight), 0
        for w in tensor.workers(5, mode=modes.TRAIN):
            total += tensor.value(5, mode=modes.TRAIN, worker=w).size
        assert total == numel, (weight, total)


def assert_no_finding(p, trial):
    got = assert_rules_evaluated(p, trial)
    for rule, s in got.items():
        assert s["status"] == "NoIssuesFound", (rule, s)


def test_hugging_face_trainer(tmp_path):
    """Trainer steps accelerate's AcceleratedOptimizer, which wraps the real optimizer: one
    trial step per optimizer step (2 micro-batches each), its evaluations as EVAL steps."""
    pytest.importorskip("transformers")
    from trainscope import modes

    p, path = run_auto(tmp_path, python("hf_trainer.py", "--steps", "40", "--out",
                                        str(tmp_path / "hf")))
    assert p.returncode == 0, why(p)
    assert_no_finding(p, path)
    t = trial_of(path)
    assert train_steps(t) == list(range(0, 40, SAVE_INTERVAL)), t.steps()
    assert t.steps(mode=modes.EVAL), t.steps()
    names = set(t.tensor_names())
    prefix = "BertForSequenceClassification_"
    assert {prefix + "classifier.weight", "gradient/" + prefix + "classifier.weight",
            prefix + "bert.embeddings.word_embeddings.weight"} <= names, sorted(names)[:20]
    # The loss the Trainer calls backward() on (the model computes it: no loss module).
    assert t.tensor_names(collection="losses"), sorted(names)[:20]
    # The attention key biases (gradient at float32 round-off: softmax cancels them) are named
    # in VanishingGradient's status, not reported.
    vg = statuses(path)["VanishingGradient"]
    assert "key.bias" in vg["message"], vg


def test_lightning_closure(tmp_path):
    """Lightning runs forward and backward inside optimizer.step(closure): the gradients are
    saved once the closure has run, one trial step per optimizer step (2 batches each)."""
    pytest.importorskip("pytorch_lightning")
    from trainscope import modes

    p, path = run_auto(tmp_path, python("lightning_module.py", "--steps", "30", "--out",
                                        str(tmp_path / "pl")))
    assert p.returncode == 0, why(p)
    assert_no_finding(p, path)
    t = trial_of(path)
    assert train_steps(t) == list(range(0, 30, SAVE_INTERVAL)), t.steps()
    assert t.steps(mode=modes.EVAL), t.steps()  # its validation loop
    names = set(t.tensor_names())
    assert {"Classifier_body.0.weight", "gradient/Classifier_body.0.weight",
            "gradient/Classifier_body.2.bias"} <= names, sorted(names)
    g = t.tensor("gradient/Classifier_body.0.weight")
    step = train_steps(t)[1]
    assert (g.value(step, mode=modes.TRAIN) != 0).any()
    # One backward() per accumulated batch, inside the closure.
    assert {"loss_output_0", "loss_output_1"} <= set(t.tensor_names(collection="losses"))
    assert t.tensor_names(collection="relu_output"), "DeadRelu's ReLU outputs"


def test_run_sets_the_switch_and_the_boot_folder(tmp_path):
    """The installed command finds the boot folder beside itself (trainscope/bin ->
    trainscope/auto/boot); TRAINSCOPE_AUTO set by the caller (0: off) is kept."""
    import trainscope.auto

    installed = pathlib.Path(sys.executable).with_name("trainscope")
    code = "import os; print('ENV', os.environ.get('TRAINSCOPE_AUTO'), os.environ['PYTHONPATH'])"
    for i, (cli, extra) in enumerate([(str(installed), {}), (CLI, {"TRAINSCOPE_AUTO": "0"})]):
        if not pathlib.Path(cli).exists():
            continue
        env = _env()
        env.update(extra)
        if cli == str(installed):
            env.pop("TRAINSCOPE_AUTO_BOOT")
        p = subprocess.run([cli, "run", "--out", str(tmp_path / f"t{i}"), "--rules", "none",
                            "--no-system", "--", sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        line = [x for x in p.stdout.splitlines() if x.startswith("ENV ")][0]
        flag, path = line.split(" ", 2)[1:]
        assert flag == extra.get("TRAINSCOPE_AUTO", "1"), line
        first = pathlib.Path(path.split(os.pathsep)[0])
        assert (first / "sitecustomize.py").is_file(), line
        assert first.parent.name == "auto" and first.name == "boot", line
        if cli == CLI:
            assert os.path.samefile(first, trainscope.auto.BOOT_DIR)


def test_manual_parameter_updates_without_an_optimizer(tmp_path):
    """pytorch/examples' word language model by default: no torch.optim, each parameter updated
    by hand. The hook is made at the second backward(); the model is what backward() reaches;
    each backward() is a training step, the evaluation passes EVAL steps."""
    from trainscope import modes

    p, path = run_auto(tmp_path, python("manual_update_lm.py", "--steps", "40"))
    assert p.returncode == 0, why(p)
    assert "no torch.optim optimizer" in p.stderr, why(p)
    assert_no_finding(p, path)
    t = trial_of(path)
    # The first iteration ran before the hook was made: 39 training steps, every 5th saved.
    assert train_steps(t) == list(range(0, 39, SAVE_INTERVAL)), t.steps()
    assert t.steps(mode=modes.EVAL), t.steps()
    names = set(t.tensor_names())
    assert {"RNNModel_encoder.weight", "RNNModel_rnn.weight_hh_l0", "RNNModel_decoder.weight",
            "gradient/RNNModel_rnn.weight_hh_l0", "gradient/RNNModel_decoder.bias",
            "NLLLoss_output_0"} <= names, sorted(names)
    g = t.tensor("gradient/RNNModel_decoder.weight")
    assert g.steps(mode=modes.TRAIN) == train_steps(t)
    w = t.tensor("RNNModel_decoder.weight")
    # The hand-made updates move the weights between saved steps.
    assert (w.value(0, mode=modes.TRAIN) != w.value(35, mode=modes.TRAIN)).any()
    loss = t.tensor("NLLLoss_output_0")
    assert float(loss.value(35, mode=modes.TRAIN)) < float(loss.value(5, mode=modes.TRAIN))


def test_policy_gradient_reinforcement_learning(tmp_path):
    """REINFORCE on the cart-pole, one episode a step: its loss, sum(-log p * normalised
    return), is centred on zero and its spread grows while the policy learns. With the rules'
    own schedules (the loss at every step) LossNotDecreasing reported it "rising" at step 39 of
    this healthy training; the series is now recognised as centred on zero and not judged, and
    the status says so. The policy is called once per environment step, and Dataloader took the
    environment's steps between those calls for batches made in the loop: a rollout is now left
    out of that check. No rule finds anything: the run exits 0."""
    p, path = run_auto(tmp_path, python("reinforce_cartpole.py", "--episodes", "120"),
                       save_interval=None)
    assert p.returncode == 0, why(p)
    lengths = [int(line.split()[4]) for line in p.stdout.splitlines()
               if line.startswith("episode ")]
    assert len(lengths) == 12 and max(lengths[-3:]) > 4 * max(lengths[:3]), p.stdout  # it learns
    assert_no_finding(p, path)
    t = trial_of(path)
    assert train_steps(t) == list(range(120)), t.steps()
    loss = t.tensor("loss_output_0")
    values = [float(loss.value(s)) for s in loss.steps()]
    assert len(values) == 120 and min(values) < 0 < max(values)
    status = statuses(path)["LossNotDecreasing"]
    assert "takes both signs around zero" in status["message"], status


def test_actor_critic_reinforcement_learning(tmp_path):
    """An actor-critic on the cart-pole (reinforce_cartpole.py --critic, as pytorch/examples'
    actor_critic.py): the model is called once per action and the optimizer steps once per
    episode. The automatic mode counts the calls of each step (index meta.model_calls): they are
    the episodes' lengths. The loss sums one term per call, so it follows the episodes' length,
    which LossNotDecreasing took for a rising loss in pytorch/examples' run (step 149); the series
    is now marked as a rollout's and not judged, and the status says so. No finding, exit 0."""
    p, path = run_auto(tmp_path, python("reinforce_cartpole.py", "--critic", "--episodes", "200"),
                       save_interval=None)
    assert p.returncode == 0, why(p)
    printed = {int(line.split()[1]): int(line.split()[4]) for line in p.stdout.splitlines()
               if line.startswith("episode ")}
    assert len(printed) == 20, p.stdout
    assert_no_finding(p, path)
    t = trial_of(path)
    assert train_steps(t) == list(range(200)), t.steps()
    # Episode e is step e - 1 (the first, before the automatic mode made its hook, is uncounted).
    assert {e: t.model_calls(e - 1) for e in printed} == printed
    calls = [t.model_calls(s) for s in range(1, 200)]
    assert min(calls) >= 8 and max(calls) >= 2 * min(calls), calls
    status = statuses(path)["LossNotDecreasing"]
    assert "the training called its model" in status["message"], status
    # The framework timeline's step spans carry the same counts (args.model_calls), and
    # StepOutlier judges the steps, whose time grows with their episodes, per model call.
    spans = {int(e["args"]["step_num"]): e["args"].get("model_calls")
             for e in raw_events(path) if e["phase"] == "Step:ModeKeys.TRAIN"}
    assert {s: spans[s] for s in range(1, 200)} == {s: t.model_calls(s) for s in range(1, 200)}
    outlier = json.loads((path / "rule-output" / "StepOutlier" / "status.json").read_text())
    assert outlier["status"] == "NoIssuesFound", outlier
    assert "s per model call" in outlier["message"], outlier


def test_deep_q_learning_on_a_gymnasium_environment(tmp_path):
    """PyTorch's DQN tutorial on gymnasium's CartPole-v1 (dqn_cartpole.py): actions chosen by
    the Q-network under no_grad between optimizer steps, one optimizer step per environment step.
    The trial records the reinforcement-learning library the training imported
    (_meta.environments, trial.md); LossNotDecreasing does not judge an agent's TD loss, which
    rises with the Q-values in a healthy run, and says so. No finding, exit 0."""
    pytest.importorskip("gymnasium")
    from trainscope import modes

    p, path = run_auto(tmp_path, python("dqn_cartpole.py", "--episodes", "30"),
                       save_interval=None)
    assert p.returncode == 0, why(p)
    assert len([ln for ln in p.stdout.splitlines() if ln.startswith("episode ")]) == 3, p.stdout
    assert_no_finding(p, path)
    t = trial_of(path)
    assert len(t.steps(mode=modes.TRAIN)) > 100, t.steps()
    (collections,) = (path / "collections" / "000000000").glob("*_collections.json")
    assert json.loads(collections.read_text())["_meta"]["environments"] == ["gymnasium"]
    status = statuses(path)["LossNotDecreasing"]
    assert "the training uses gymnasium (reinforcement learning)" in status["message"], status


def test_manual_updates_planted_explosion_is_caught(tmp_path):
    p, path = run_auto(tmp_path, python("manual_update_lm.py", "--steps", "30", "--lr", "1e38"))
    got = statuses(path)
    assert got["ExplodingTensor"]["status"] == "IssuesFound", (got["ExplodingTensor"],
                                                               p.stderr[-2000:])


def test_raw_pixel_inputs_are_caught_by_check_input_images(tmp_path):
    """The model's input is captured for CheckInputImages at its save interval, with no hook in
    the script: raw 0-255 pixels are named, with the channel's mean and spread."""
    path = tmp_path / "trial"
    argv = [CLI, "run", "--out", str(path), "--rules", "none", "--no-system",
            "--rule", "CheckInputImages:threshold_samples=64", "--",
            *python("cnn_raw_pixels.py", "--steps", "40")]
    p = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 3), why(p)
    status = json.loads((path / "rule-output" / "CheckInputImages" / "status.json").read_text())
    assert status["status"] == "IssuesFound", (status, p.stderr[-2000:])
    assert "Net_input_0" in status["message"] and "raw pixel values" in status["message"], status


SALIENCY = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
for _ in range(20):  # gradients of the inputs, for saliency maps: nothing is trained
    x = torch.randn(8, 16, requires_grad=True)
    model.zero_grad()
    model(x)[:, 0].sum().backward()
    saliency = x.grad.abs()
print("done", flush=True)
"""


def test_gradients_without_training_are_not_taken_for_a_training(tmp_path):
    """backward() with no optimizer and parameters that never change (a saliency script) is
    not a training: no hook is made, so no rule judges weights that were never meant to move."""
    p, path = run_auto(tmp_path, [sys.executable, "-c", SALIENCY])
    assert "done" in p.stdout, why(p)
    assert "no torch.optim optimizer" not in p.stderr, why(p)
    assert not list(path.glob("index/*/*.json")), "no step was saved"
