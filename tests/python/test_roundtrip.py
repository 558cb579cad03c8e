"""Round trips: trainscope._core.TrialWriter -> trainscope.create_trial, for every dtype and shape,
from numpy and torch, checking values are read back bit for bit and without a copy."""

import numpy as np
import pytest
from conftest import write_trial

import trainscope
from trainscope import _core, modes

NUMPY_DTYPES = [
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128",
]


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        if n >= 2:
            a[0], a[1] = info.min, info.max
    elif dt.kind == "c":
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    else:
        a = rng.standard_normal(n).astype(dt)
        if n >= 4:
            a[:4] = [np.nan, np.inf, -0.0, np.finfo(dt).max]
    return a.reshape(shape)


def assert_same(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    # Bit-exact: compare the bytes (NaN == NaN, -0.0 != 0.0).
    assert got.tobytes(order="C") == want.tobytes(order="C")


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_dtypes_and_shapes(trial_dir, dtype):
    cases = {
        "scalar": sample(dtype, ()),
        "vec": sample(dtype, (7,)),
        "mat": sample(dtype, (3, 5)),
        "cube": sample(dtype, (2, 3, 4)),
        "empty": sample(dtype, (0,)),
        "empty2d": sample(dtype, (2, 0)),
        "transposed": sample(dtype, (4, 6)).T,  # strided: the writer makes it contiguous
        "reversed": sample(dtype, (9,))[::-2],
    }
    write_trial(trial_dir, [(0, 1, 0, {f"{dtype}/{k}": v for k, v in cases.items()})])
    trial = trainscope.create_trial(str(trial_dir))
    for k, want in cases.items():
        got = trial.tensor(f"{dtype}/{k}").value(0)
        assert_same(got, np.array(want, order="C"))
        assert not got.flags.writeable


def test_value_is_zero_copy_view_of_the_map(trial_dir):
    big = np.arange(25 * 1024 * 1024, dtype=np.float32)  # 100 MiB
    write_trial(trial_dir, [(0, 1, 0, {"big": big, "small": np.ones(3)})])
    trial = trainscope.create_trial(str(trial_dir))
    got = trial.tensor("big").value(0)
    assert got.shape == big.shape and got.dtype == np.float32
    assert got.flags.owndata is False
    assert got.flags.writeable is False
    assert type(got.base).__name__ == "PyCapsule"  # holds the C++ keepalive of the mapping
    assert got[0] == 0 and got[-1] == big[-1] and np.array_equal(got[::1000003], big[::1000003])
    with pytest.raises(ValueError):
        got[0] = 1.0
    # A view keeps the mapping alive after the array and the trial are gone.
    tail = got[-3:]
    del got, trial
    assert list(tail) == list(big[-3:])


def test_python_scalars_and_strings(trial_dir):
    write_trial(
        trial_dir,
        [(0, 4, 0, {"f": 2.5, "i": -7, "b": True, "u": 2**64 - 1,
                    "words": ["alpha", "béta", ""], "np_words": np.array(["x", "yz"])})],
    )
    trial = trainscope.create_trial(str(trial_dir))
    v = {n: trial.tensor(n).value(0) for n in trial.tensor_names()}
    assert v["f"].dtype == np.float64 and v["f"].shape == () and v["f"] == 2.5
    assert v["i"].dtype == np.int64 and v["i"] == -7
    assert v["b"].dtype == np.bool_ and bool(v["b"]) is True
    assert v["u"].dtype == np.uint64 and int(v["u"]) == 2**64 - 1
    assert v["words"].tolist() == ["alpha", "béta", ""]
    assert v["np_words"].tolist() == ["x", "yz"]



@pytest.fixture
def torch_mod():
    return pytest.importorskip("torch")


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
              "uint8", "bool", "complex64"]
)
def test_torch_tensors(trial_dir, torch_mod, dtype):
    t = torch_mod
    tdt = getattr(t, dtype)
    base = t.arange(-12, 12, dtype=t.float64).reshape(4, 6) / 3
    x = (base > 0) if dtype == "bool" else base.to(tdt)
    cases = {"mat": x, "col": x[:, 1], "t": x.t(), "scalar": x[1, 2], "empty": x[:0]}
    if dtype == "float32":
        cases["grad"] = t.ones(3, requires_grad=True) * 2  # detached by the writer
        cases["param"] = t.nn.Parameter(x.clone())  # torch's own types: the to_dlpack path

        class Sub(t.Tensor):  # a subclass: the generic __dlpack__ path
            pass

        cases["subclass"] = x.as_subclass(Sub)
    if dtype == "complex64":
        cases["conj"] = x.conj()  # a lazily conjugated view: saved conjugated
        cases["neg"] = x.conj().imag  # a lazily negated view: saved negated
    write_trial(trial_dir, [(0, 1, 0, {f"{dtype}/{k}": v for k, v in cases.items()})])
    trial = trainscope.create_trial(str(trial_dir))
    for k, src in cases.items():
        got = trial.tensor(f"{dtype}/{k}").value(0)
        src = src.detach().resolve_conj().resolve_neg()
        if dtype == "bfloat16":
            want = src.float().numpy()  # bf16 comes back as float32, exactly
        else:
            want = src.contiguous().numpy()
        assert_same(got, want)


def test_add_tensor_nocopy_keeps_the_object_alive(trial_dir):
    import gc
    import weakref

    class Arr(np.ndarray):
        pass

    a = np.arange(1000, dtype=np.int32).view(Arr)
    ref = weakref.ref(a)
    w = _core.TrialWriter(str(trial_dir))
    w.begin_step(0, modes.TRAIN, 0)
    w.add_tensor_nocopy("a", a)
    del a
    gc.collect()
    w.end_step()
    w.flush()
    w.write_collections('{"collections": {}, "_meta": {"num_workers": 1}}')
    w.close()
    gc.collect()
    assert ref() is None  # released by the writer thread once written
    trial = trainscope.create_trial(str(trial_dir))
    assert trial.tensor("a").value(0).tolist() == list(range(1000))


def test_add_tensor_nocopy_refuses_strided(trial_dir):
    w = _core.TrialWriter(str(trial_dir))
    w.begin_step(0, 1, 0)
    with pytest.raises(ValueError, match="contiguous"):
        w.add_tensor_nocopy("x", np.zeros((4, 4)).T)
    w.close()


def test_writer_stats_and_steps(trial_dir):
    w = _core.TrialWriter(str(trial_dir), worker="worker_3")
    assert w.worker == "worker_3" and not w.step_open
    w.begin_step(5, modes.EVAL, 2)
    assert w.step_open
    w.add_tensor("x", np.ones(10, np.float32))
    w.add_shape("y", [3, 4])
    w.end_step()
    w.flush()
    s = w.stats()
    assert s["steps_written"] == 1 and s["tensors_written"] >= 1 and s["bytes_written"] > 40
    assert w.first_error() is None
    with pytest.raises(_core.InvalidArgumentError):
        w.begin_step(5, modes.EVAL, 3)  # not after step 5
    w.close()
    w.close()  # idempotent


def test_io_threads_write_every_step_in_order(trial_dir):
    # Four I/O threads; the queue is small, so steps pile up and are written several at once.
    want = {step: sample("float32", (step % 7 + 1, 4096), seed=step) for step in range(60)}
    write_trial(trial_dir, [(s, modes.TRAIN, s, {"w": a}) for s, a in want.items()],
                io_threads=4, max_queue_bytes=1 << 20)
    trial = trainscope.create_trial(str(trial_dir))
    assert trial.steps() == list(range(60))
    for step, a in want.items():
        assert_same(trial.tensor("w").value(step), a)
    with pytest.raises(ValueError, match="io_threads"):
        _core.TrialWriter(str(trial_dir) + "2", io_threads=-1)


def test_writer_rejects_bad_values(trial_dir):
    w = _core.TrialWriter(str(trial_dir))
    w.begin_step(0, 1, 0)
    with pytest.raises(TypeError, match="float128|longdouble|not supported"):
        w.add_tensor("ld", np.zeros(2, dtype=np.longdouble))
    with pytest.raises(TypeError):
        w.add_tensor("obj", np.array([object()], dtype=object))
    with pytest.raises(ValueError, match="64 bits"):
        w.add_tensor("huge", 2**80)
    with pytest.raises(ValueError):
        _core.TrialWriter(str(trial_dir) + "2", when_full="sometimes")
    w.close()


def test_cuda_tensor_is_refused_with_advice(trial_dir):
    class FakeCuda:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kw):
            raise AssertionError("must not be called")

    w = _core.TrialWriter(str(trial_dir))
    w.begin_step(0, 1, 0)
    with pytest.raises(ValueError, match="move it to the CPU"):
        w.add_tensor("x", FakeCuda())
    w.close()


def test_modes_and_step_maps(trial_dir):
    steps = [(0, 1, 0), (2, 1, 1), (4, 2, 0), (6, 1, 2), (8, 3, 0)]
    write_trial(trial_dir, [(g, m, ms, {"x": np.float32(g)}) for g, m, ms in steps])
    trial = trainscope.create_trial(str(trial_dir))
    assert trial.steps() == [0, 2, 4, 6, 8]
    assert trial.steps(modes.TRAIN) == [0, 1, 2]
    assert trial.steps(mode=modes.EVAL) == [0]
    assert sorted(m.name for m in trial.modes()) == ["EVAL", "PREDICT", "TRAIN"]
    assert trial.mode(4) == modes.EVAL and trial.mode_step(6) == 2
    assert trial.mode(3) is None and trial.mode_step(3) is None
    assert trial.global_step(modes.TRAIN, 2) == 6 and trial.global_step(modes.PREDICT, 5) is None
    x = trial.tensor("x")
    assert x.steps(mode=modes.TRAIN) == [0, 1, 2]
    assert float(x.value(1, mode=modes.TRAIN)) == 2.0
    assert float(x.value(6)) == 6.0
    assert x.values(mode=modes.EVAL) == {0: np.float32(4)}
    assert x.prev_steps(6, 2) == [4, 6]
    assert x.workers(8) == ["worker_0"]
    assert trial.workers() == ["worker_0"]
    assert trial.has_passed_step(4) == trainscope.StepState.AVAILABLE
    assert trial.loaded_all_steps and trial.last_complete_step == 8


def test_corrupted_value_raises_corruption(trial_dir):
    write_trial(trial_dir, [(0, 1, 0, {"x": np.arange(64, dtype=np.float64)})])
    (event_file,) = (trial_dir / "events").rglob("*.tfevents")
    data = bytearray(event_file.read_bytes())
    data[-40] ^= 0xFF  # a byte inside the tensor's payload
    event_file.write_bytes(bytes(data))
    trial = trainscope.create_trial(str(trial_dir))
    with pytest.raises(trainscope.exceptions.TrialCorruptionError, match="tfevents") as info:
        trial.tensor("x").value(0)
    assert isinstance(info.value, trainscope.exceptions.IndexReaderException)


def test_dropping_an_open_writer_closes_it(trial_dir):
    import gc

    w = _core.TrialWriter(str(trial_dir))
    w.write_collections('{"collections": {}, "_meta": {"num_workers": 1}}')
    for step in range(4):  # no-copy tensors are released by the writer thread under the GIL
        w.begin_step(step, 1, step)
        w.add_tensor_nocopy("x", np.full(1 << 16, step, dtype=np.int32))
        w.end_step()
    del w  # the destructor drains the queue with the GIL released (no deadlock)
    gc.collect()
    trial = trainscope.create_trial(str(trial_dir))
    assert trial.steps() == [0, 1, 2, 3] and trial.loaded_all_steps
    assert int(trial.tensor("x").value(3)[-1]) == 3
