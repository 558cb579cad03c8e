"""The training programs of tests/training/programs are faulty (or healthy) in fact, measured with
plain PyTorch, independently of trainscope (tests/training/plain_measure.py replaces the
trainscope.pytorch hook by a stand-in that measures with ordinary PyTorch hooks).

Each check states the measured fact the program's docstring records, with a margin: if an edit
to a program (or a new PyTorch) made the planted problem disappear, or a healthy program stop
training well, this test says so before any rule is blamed.

The programs run in two processes, one after the other in each (PyTorch imported once per
process), so this costs about the programs' own compute time.
"""

import json
import math
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
with open(os.path.join(PROGRAMS, "manifest.json")) as f:
    MANIFEST = json.load(f)
ENTRIES = {e["program"]: e for e in MANIFEST["programs"]}
# TRAINSCOPE_TRAINING_ONLY=a.py,b.py measures only those programs (while working on them).
if os.environ.get("TRAINSCOPE_TRAINING_ONLY"):
    ENTRIES = {p: ENTRIES[p] for p in os.environ["TRAINSCOPE_TRAINING_ONLY"].split(",")}

pytest.importorskip("torch")
pytest.importorskip("sklearn")


def _window_means(losses, n=10):
    return [sum(losses[i:i + n]) / n for i in range(0, len(losses) - n + 1, n)]


def _train_losses(result):
    return [s["losses"][0] for s in result["steps"]
            if s["mode"] in ("TRAIN", "GLOBAL") and s["losses"]]


def _overfit_ratios(summary):
    return [(p["val_loss"] - p["train_loss"]) / p["train_loss"]
            for p in summary["eval_passes"] if p["val_loss"] is not None and p["train_loss"]]


def _params(d, part):
    return {k: v for k, v in d.items() if part in k}


# ---- one check per program: the fact its docstring states --------------------------------------

def check_vanishing_gradient_deep_sigmoid(r, s):
    gmin = s["grad_abs_mean_min"]
    assert gmin["Sequential_0.weight"] < 1e-9, gmin
    vanished = [n for n, v in gmin.items() if v < 1e-7]
    assert len(vanished) >= 10, vanished  # the first layers, weights and biases
    assert s["train_loss_last"] > 2.2  # it does not learn


def check_exploding_lr_nan(r, s):
    assert s["first_nonfinite_step"] is not None and s["first_nonfinite_step"] <= 6, s
    assert math.isnan(s["train_loss_last"])


def check_loss_not_decreasing_zero_grad_order(r, s):
    assert max(s["update_ratio_max"].values()) == 0.0  # nothing is ever updated
    w = _window_means(_train_losses(r))
    # a window by step 79 is not 0.1 % lower than each of the 3 windows before it
    drops = [(max(w[k - 3:k]) - w[k]) / max(w[k - 3:k]) * 100 for k in range(3, len(w))]
    assert min(drops[:5]) < 0.1, drops


def check_overfit_tiny_train_set(r, s):
    ratios = _overfit_ratios(s)
    first_pass_over = next(p for p, x in zip(s["eval_passes"], ratios) if x > 0.1)
    assert first_pass_over["last_step"] < 60
    assert ratios[-1] > 10
    # the validation loss stops improving by step 98 while the training loss still falls
    passes = s["eval_passes"]
    stalled = [b for a, b in zip(passes, passes[2:])
               if b["val_loss"] > 0.99 * a["val_loss"] and b["train_loss"] < 0.9 * a["train_loss"]]
    assert stalled and stalled[0]["last_step"] <= 98, [p["val_loss"] for p in passes]


def check_overtraining_no_early_stopping(r, s):
    vals = [p["val_loss"] for p in s["eval_passes"]]
    best = min(range(len(vals)), key=vals.__getitem__)
    # at least 10 passes after the best one, none better than it by 1 %
    assert len(vals) - 1 - best >= 10, vals
    assert all(v > vals[best] * 0.99 for v in vals[best + 1:])


def check_similar_across_runs_unseeded_augmentation(r, s):
    steps = r["steps"]
    n = len(steps) // 2  # the two runs, one after the other
    assert steps[0]["losses"] != steps[n]["losses"]


def check_tensor_variance_weight_decay_collapse(r, s):
    first, last = s["weight_var_first_last"]["TwoLayer_encoder.weight"]
    assert first > 1e-3 and last < 1e-7, (first, last)
    at45 = r["steps"][45]["weight_var"]["TwoLayer_encoder.weight"]
    assert at45 < 1e-6


def check_frozen_head_not_in_optimizer(r, s):
    assert s["update_ratio_max"]["Classifier_head.weight"] == 0.0
    assert s["update_ratio_max"]["Classifier_head.bias"] == 0.0
    assert s["update_ratio_min"]["Classifier_backbone.0.weight"] > 1e-4


def check_unnormalized_images_cnn(r, s):
    assert s["input_step0"]["shape"][1:] == [1, 8, 8]
    assert s["input_step0"]["channel_means"][0] > 4.0


def check_nlp_padding_dominates(r, s):
    assert s["input_step0"]["token0_fraction"] > 0.8


def check_poor_weight_init_std_one(r, s):
    v = s["relu_input_var_step0"]
    layers = [v[f"relu#{i}"] for i in range(4)]
    assert all(b / a > 10 for a, b in zip(layers, layers[1:])), layers


def check_saturated_tanh_unscaled_features(r, s):
    assert s["saturated_first_step_over_half"]["tanh#0"] <= 3
    windows = [st["saturated"]["tanh#0"]["inactive_fraction"] for st in r["steps"]
               if st["saturated"]]
    assert min(windows) > 0.6, windows


def check_dead_relu_negative_bias(r, s):
    assert s["relu_first_step_over_half"]["relu#0"] <= 1
    windows = [st["relu"]["relu#0"]["inactive_fraction"] for st in r["steps"] if st["relu"]]
    assert min(windows) == 1.0


def check_weight_update_ratio_tiny_init(r, s):
    assert s["update_ratio_max"]["MLP_l1.weight"] > 10
    assert s["update_ratio_max"]["MLP_l2.weight"] > 10


def check_all_zero_integer_division(r, s):
    assert all(st["input"]["zero_fraction"] == 1.0 for st in r["steps"])


def check_class_imbalance_rare_classes(r, s):
    counts = s["train_label_counts"]
    assert max(counts.values()) / min(counts.values()) > 10, counts
    first = [x for st in r["steps"][:21] for x in st["saved"]["labels"]]
    assert len(first) >= 500


def check_confusion_label_mapping_bug(r, s):
    p = s["eval_passes"][0]
    assert p["first_step"] == 38 and p["recall"]["8"] < 0.1, p


def check_stalled_training_slow_loader(r, s):
    assert s["max_step_gap_s"] > 4.0
    assert s["max_step_gap_after_step"] == 14


def _healthy_classifier(r, s, min_accuracy, min_recall):
    assert s["first_nonfinite_step"] is None
    p = s["eval_passes"][-1]
    assert p["accuracy"] >= min_accuracy and p["min_recall"] >= min_recall, p
    assert s["train_loss_last"] < s["train_loss_first"] / 4


def check_healthy_digits_mlp(r, s):
    _healthy_classifier(r, s, 0.97, 0.9)
    assert max(s["relu_inactive_max"].values()) < 0.1


def check_healthy_digits_cnn(r, s):
    _healthy_classifier(r, s, 0.97, 0.9)
    assert abs(s["input_step0"]["channel_means"][0]) < 0.1


def check_healthy_text_embedding(r, s):
    _healthy_classifier(r, s, 0.9, 0.9)
    assert s["input_step0"]["token0_fraction"] < 0.5


def check_healthy_regression_adamw(r, s):
    assert s["first_nonfinite_step"] is None
    vals = [p["val_loss"] for p in s["eval_passes"]]
    assert vals == sorted(vals, reverse=True) and vals[-1] < 0.08, vals
    assert max(_overfit_ratios(s)) < 0.1


def check_healthy_tanh_sigmoid_scaled(r, s):
    # Both activation layers judged, and no unit of either saturated in any window.
    assert set(s["saturated_inactive_max"]) == {"tanh#0", "sigmoid#0"}, s["saturated_inactive_max"]
    assert max(s["saturated_inactive_max"].values()) == 0.0, s["saturated_inactive_max"]
    assert s["first_nonfinite_step"] is None
    assert s["train_loss_last"] < 0.8 * s["train_loss_first"]
    vals = [p["val_loss"] for p in s["eval_passes"]]
    assert vals == sorted(vals, reverse=True), vals  # still improving after every epoch


def check_healthy_reproducible_reruns(r, s):
    steps = r["steps"]
    n = len(steps) // 2
    assert [st["losses"] for st in steps[:n]] == [st["losses"] for st in steps[n:]]


# ---- the validation corpus of issue 19: healthy runs rules were not tuned on, and faults -------

def _train_median(r, lo, hi):
    tl = sorted(_train_losses(r)[lo:hi])
    return tl[len(tl) // 2]


def check_diverging_forgotten_zero_grad(r, s):
    assert s["first_nonfinite_step"] is None  # divergence without NaN
    tl = _train_losses(r)
    assert s["train_loss_last"] > 10 * tl[0], (tl[0], s["train_loss_last"])


def check_diverging_lstm_absurd_lr(r, s):
    assert s["first_nonfinite_step"] is None
    tl = _train_losses(r)
    assert _train_median(r, 10, 60) > 20 * tl[0], (tl[0], _train_median(r, 10, 60))


def check_dead_relu_lr_spike(r, s):
    tl = _train_losses(r)
    assert max(tl[:10]) > 3 * tl[0], tl[:10]
    shares = [st["active_share"]["1#0"] for st in r["steps"][10:]]
    assert max(shares) < 0.1, shares  # more than 90 % of the outputs zero at every step


def check_saturated_tanh_large_init(r, s):
    share = r["steps"][0]["active_share"]["1#0"]
    assert share < 0.3, share  # more than 70 % of the tanh inputs beyond +-9.5
    # ... while every unit is in its linear range for some samples (the per-unit test misses it)
    assert s["saturated_inactive_max"]["1#0"] < 0.5, s["saturated_inactive_max"]


def check_healthy_noisy_mlp_small_batches(r, s):
    assert s["first_nonfinite_step"] is None
    tl = _train_losses(r)
    assert sum(tl[-50:]) / 50 < sum(tl[:10]) / 10 / 2.5
    assert s["eval_passes"][-1]["accuracy"] >= 0.85, s["eval_passes"][-1]


def check_healthy_converged_easy_task(r, s):
    tl = _train_losses(r)
    assert s["train_loss_last"] < 0.01 and s["train_loss_last"] < 0.01 * tl[0], s
    assert _window_means(tl)[4] < 0.05 * tl[0]  # learned within 50 steps, then converged


def check_healthy_resnet_batchnorm(r, s):
    _healthy_classifier(r, s, 0.9, 0.5)
    assert max(s["relu_inactive_max"].values()) < 0.2, s["relu_inactive_max"]


def check_healthy_lstm_lm_clipping(r, s):
    assert s["first_nonfinite_step"] is None
    assert s["train_loss_first"] > 3.0 and s["train_loss_last"] < 2.0, s


def check_healthy_gan_two_optimizers(r, s):
    assert s["first_nonfinite_step"] is None
    gen = r["steps"][-1]["saved"]["generated"]
    mean = sum(gen) / len(gen)
    std = (sum((g - mean) ** 2 for g in gen) / len(gen)) ** 0.5
    assert abs(mean - 3.0) < 0.5 and 0.2 < std < 1.5, (mean, std)


def check_healthy_frozen_backbone_finetune(r, s):
    frozen = _params(s["update_ratio_max"], "Sequential_0.")
    assert frozen and max(frozen.values()) == 0.0, frozen
    assert min(_params(s["update_ratio_max"], "Sequential_1.").values()) > 1e-3
    assert s["train_loss_last"] < s["train_loss_first"] / 2


def check_healthy_cosine_schedule(r, s):
    _healthy_classifier(r, s, 0.9, 0.5)


def check_healthy_transformer_warmup(r, s):
    assert s["first_nonfinite_step"] is None
    assert s["train_loss_last"] < s["train_loss_first"] / 3
    assert s["eval_passes"][-1]["accuracy"] >= 0.9, s["eval_passes"][-1]


def check_healthy_conv_autoencoder_sigmoid(r, s):
    assert s["first_nonfinite_step"] is None
    val = [p["val_loss"] for p in s["eval_passes"]]
    assert len(val) >= 4 and all(b < a for a, b in zip(val, val[1:])), val
    assert s["train_loss_last"] < s["train_loss_first"] / 2, s


def check_healthy_gru_sequence_classifier(r, s):
    assert s["first_nonfinite_step"] is None
    assert s["eval_passes"][-1]["accuracy"] > 0.85, s["eval_passes"][-1]
    assert s["train_loss_last"] < s["train_loss_first"] / 2, s


def check_exploding_relu_rnn_no_clipping(r, s):
    assert s["first_nonfinite_step"] is not None and s["first_nonfinite_step"] < 10, s


def check_labels_shuffled_separately(r, s):
    tl = _train_losses(r)
    assert sum(tl[-10:]) / 10 > 2.1, tl[-10:]
    assert s["eval_passes"][-1]["accuracy"] < 0.25, s["eval_passes"][-1]


def check_lr_far_too_low(r, s):
    tl = _train_losses(r)
    first, last = sum(tl[:10]) / 10, sum(tl[-10:]) / 10
    assert abs(last - first) < 0.05 * first, (first, last)
    assert max(s["update_ratio_max"].values()) < 1e-4, s["update_ratio_max"]


def check_optimizer_on_stale_copy(r, s):
    assert max(s["update_ratio_max"].values()) == 0.0, s["update_ratio_max"]
    tl = _train_losses(r)
    first, last = sum(tl[:10]) / 10, sum(tl[-10:]) / 10
    assert abs(last - first) < 0.1 * first, (first, last)


# ---- the corpus's second half: more architectures, optimisers and real mistakes ---------------

def _val_losses(s):
    return [p["val_loss"] for p in s["eval_passes"] if p["val_loss"] is not None]


def check_healthy_sequential_bce_tutorial(r, s):
    assert s["first_nonfinite_step"] is None
    assert s["train_loss_last"] < s["train_loss_first"] / 4, s
    assert _val_losses(s)[-1] < 0.2, _val_losses(s)


def check_healthy_vae_digits(r, s):
    assert s["first_nonfinite_step"] is None
    val = _val_losses(s)
    assert val[-1] < 0.9 * val[0], val
    assert s["train_loss_last"] < s["train_loss_first"] * 2 / 3, s


def check_healthy_causal_transformer_lm(r, s):
    assert s["first_nonfinite_step"] is None
    assert s["train_loss_first"] > 3.0 and s["train_loss_last"] < 1.6, s
    val = _val_losses(s)
    assert all(b < a for a, b in zip(val, val[1:])), val


def check_healthy_bf16_autocast_cnn(r, s):
    _healthy_classifier(r, s, 0.95, 0.8)


def check_healthy_grad_accumulation(r, s):
    _healthy_classifier(r, s, 0.95, 0.85)
    # three of every four steps change no weight: accumulation, not a frozen model
    still = [st for st in r["steps"] if st["mode"] == "TRAIN" and st.get("update_ratio")
             and max(st["update_ratio"].values()) == 0.0]
    assert still, "no step without an update"


def check_healthy_groupnorm_steplr(r, s):
    _healthy_classifier(r, s, 0.95, 0.9)


def check_healthy_huber_leaky_adagrad(r, s):
    assert s["first_nonfinite_step"] is None
    assert _val_losses(s)[-1] < s["train_loss_first"] / 3, (_val_losses(s), s)


def check_healthy_attention_label_smoothing(r, s):
    assert s["first_nonfinite_step"] is None
    p = s["eval_passes"][-1]
    assert p["accuracy"] >= 0.9 and p["min_recall"] >= 0.85, p
    # label smoothing 0.1 keeps the loss near 0.29 however right the model is
    assert 0.25 < s["train_loss_last"] < s["train_loss_first"] / 3, s


def check_healthy_long_noisy_labels(r, s):
    tl = _train_losses(r)
    assert len(tl) >= 1500
    assert sum(tl[-200:]) / 200 < 0.6 * sum(tl[:20]) / 20
    assert _val_losses(s)[-1] < 0.5, _val_losses(s)  # on clean labels


def check_healthy_distillation_frozen_teacher(r, s):
    teacher = _params(s["update_ratio_max"], "teacher")
    assert teacher and max(teacher.values()) == 0.0, teacher
    assert min(_params(s["update_ratio_max"], "student").values()) > 1e-3
    assert s["eval_passes"][-1]["accuracy"] >= 0.93, s["eval_passes"][-1]


def check_healthy_conv1d_timeseries(r, s):
    _healthy_classifier(r, s, 0.9, 0.85)


def check_healthy_dcgan_digits(r, s):
    assert s["first_nonfinite_step"] is None
    gen = r["steps"][-1]["saved"]["generated_mean"]
    assert abs(gen[0] - (-0.4)) < 0.3, gen  # the data's pixel mean is about -0.4


def check_healthy_torch_compile_mlp(r, s):
    _healthy_classifier(r, s, 0.93, 0.8)


def check_healthy_multitask_two_heads(r, s):
    _healthy_classifier(r, s, 0.93, 0.8)


def check_data_sorted_by_class(r, s):
    for p in s["eval_passes"]:
        assert p["min_recall"] < 0.1, p
    first = s["eval_passes"][0]
    assert sum(v < 0.5 for v in first["recall"].values()) >= 4, first


def check_softmax_then_cross_entropy(r, s):
    tl = _train_losses(r)
    assert sum(tl[-20:]) / 20 > 1.9, tl[-20:]
    assert sum(tl[-20:]) / 20 > 0.97 * sum(tl[:20]) / 20


def check_lr_scheduler_every_batch(r, s):
    late = [max(st["update_ratio"].values()) for st in r["steps"][80:] if st.get("update_ratio")]
    assert late and max(late) < 1e-8, max(late)
    assert s["train_loss_last"] > 0.5, s


def check_detach_by_mistake(r, s):
    encoder = _params(s["update_ratio_max"], "encoder")
    assert encoder and max(encoder.values()) == 0.0, encoder
    assert min(_params(s["update_ratio_min"], "head").values()) > 0.0


def _step_losses(r, mode):
    """Each step of `mode`'s losses: every closure evaluation of an LBFGS step, in order."""
    return [s["losses"] for s in r["steps"] if s["mode"] == mode and s["losses"]]


def check_healthy_lbfgs_sine_lstm(r, s):
    assert s["first_nonfinite_step"] is None
    train = _step_losses(r, "TRAIN")
    assert len(train) == 3 and all(len(e) == 20 for e in train), [len(e) for e in train]
    assert train[-1][-1] < 0.01 * train[0][0], (train[0][0], train[-1][-1])
    test = _step_losses(r, "EVAL")
    assert test[-1][0] < 0.01 * train[0][0], (test[-1][0], train[0][0])


def check_diverging_lbfgs_lr_no_line_search(r, s):
    assert s["first_nonfinite_step"] is None
    first = _step_losses(r, "TRAIN")[0]
    assert len(first) == 20 and first[9] > 1000 * first[0], first


CHECKS = {name[len("check_"):] + ".py": fn for name, fn in globals().items()
          if name.startswith("check_")}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Runs every program of the manifest under the plain-PyTorch stand-in; {program: result}."""
    tmp = tmp_path_factory.mktemp("plain")
    names = sorted(ENTRIES)
    halves = [names[0::2], names[1::2]]
    procs = []
    for i, half in enumerate(halves):
        jobs = [{"program": os.path.join(PROGRAMS, n),
                 "args": ["--out", str(tmp / n[:-3])] + ENTRIES[n]["args"],
                 "json": str(tmp / (n[:-3] + ".json"))} for n in half]
        spec = tmp / f"batch{i}.json"
        spec.write_text(json.dumps(jobs))
        env = dict(os.environ, PYTHONHASHSEED="0")
        env.pop("TRAINSCOPE_CONFIG", None)
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(HERE, "plain_measure.py"), "--batch", str(spec)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(tmp)))
    for p in procs:
        out, _ = p.communicate(timeout=1500)
        assert p.returncode == 0, out.decode(errors="replace")[-3000:]
    results = {}
    for n in names:
        with open(tmp / (n[:-3] + ".json")) as f:
            results[n] = json.load(f)
    return results


def test_every_program_has_a_check():
    assert set(ENTRIES) <= set(CHECKS), sorted(set(ENTRIES) - set(CHECKS))
    if not os.environ.get("TRAINSCOPE_TRAINING_ONLY"):
        assert sorted(CHECKS) == sorted(ENTRIES)


@pytest.mark.parametrize("program", sorted(ENTRIES))
def test_program_is_what_its_docstring_says(measured, program):
    r = measured[program]
    CHECKS[program](r, r["summary"])
