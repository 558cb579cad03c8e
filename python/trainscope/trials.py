"""create_trial and Trial: smdebug's analysis API over trainscope's C++ reader.

``create_trial(path)`` blocks until the trial's collections files exist, as smdebug's does, and
raises MissingCollectionFiles if the job ended without writing any. Completeness, following a
growing trial and the exception taxonomy come from the C++ Trial (trainscope/trial.h); this
module only adapts names and types.

Differences from smdebug, on purpose: values are read-only zero-copy numpy arrays (see
trainscope.tensor); every dtype reads back as written (smdebug misreads int8 and cannot read
int16/uint16/uint32/uint64/complex64); a saved shape never hides a saved value; waiting uses
file-system notifications instead of 2-second sleeps; ``create_trial`` takes ``timeout``
(seconds, None = wait forever) and raises TrialNotReady when it passes.
Not supported yet: ``s3://`` paths and ``profiler=True`` (SMDebugNotImplementedError).
"""

import logging
import os
import re
import time
import warnings

from . import _errors
from . import exceptions as ex
from ._native import load as _load_core
from .collection import Collection
from .modes import ModeKeys, StepState, to_mode
from .tensor import Tensor

logger = logging.getLogger("trainscope")

END_OF_JOB_FILE = "training_job_end.ts"


def _env_number(name, default, cast):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return cast(raw)
    except ValueError:
        raise ex.SMDebugValueError(f"environment variable {name}={raw!r} is not a number") from None


def create_trial(
    path,
    name=None,
    range_steps=None,
    parallel=True,
    check=False,
    index_mode=True,
    cache=False,
    *,
    timeout=None,
    profiler=False,
    **kwargs,
):
    """Opens the trial at `path` (a local folder), waiting for its collections files.

    range_steps: (begin, end) global steps to read, begin inclusive, end exclusive, either None.
    cache: keep values returned by Tensor.value for reuse.
    timeout: seconds to wait for the collections files (None: forever); TrialNotReady after it.
    parallel, check and index_mode are accepted for compatibility (reads are always indexed;
    payload checksums are always verified when the index has them).
    Extra keyword arguments: refresh_interval (s), end_delay (s), use_inotify, poll (s).
    """
    if profiler:
        raise ex.SMDebugNotImplementedError("profiler trials are not supported by create_trial yet")
    path = str(path).strip()
    if path.startswith("s3://"):
        raise ex.SMDebugNotImplementedError(f"{path}: s3:// trials are not supported yet")
    if name is None:
        name = os.path.basename(os.path.normpath(path))
    return LocalTrial(
        name,
        path,
        range_steps=range_steps,
        parallel=parallel,
        check=check,
        index_mode=index_mode,
        cache=cache,
        timeout=timeout,
        **kwargs,
    )


def training_has_ended(trial_prefix):
    """Marks the trial at `trial_prefix` as finished: writes its end marker
    (training_job_end.ts, empty), creating the folder if needed. What a writer does when it
    closes; readers then stop waiting for more steps. Idempotent."""
    trial_prefix = str(trial_prefix)
    if trial_prefix.startswith("s3://"):
        raise ex.SMDebugNotImplementedError(f"{trial_prefix}: s3:// trials are not supported yet")
    os.makedirs(trial_prefix, exist_ok=True)
    path = os.path.join(trial_prefix, END_OF_JOB_FILE)
    if not os.path.exists(path):
        tmp = f"{path}.tmp{os.getpid()}"
        open(tmp, "w").close()
        os.replace(tmp, path)


def has_training_ended(trial_prefix):
    """True if the trial at `trial_prefix` has its end marker (training_job_end.ts)."""
    return os.path.exists(os.path.join(str(trial_prefix), END_OF_JOB_FILE))


class Trial:
    """A trial being read; see create_trial. Thread-safe as the C++ Trial is, except `cache`."""

    def __init__(
        self,
        name,
        path,
        range_steps=None,
        parallel=True,
        check=False,
        index_mode=True,
        cache=False,
        timeout=None,
        refresh_interval=0.0,
        end_delay=None,
        use_inotify=True,
        poll=0.1,
    ):
        self.name = name
        self.path = path
        self.range_steps = range_steps
        self.parallel = parallel
        self.check = check
        self.index_mode = index_mode
        self.cache = cache
        self.logger = logger
        # smdebug's no_refresh() flips this; the C++ reader decides when to refresh (it is cheap:
        # only new index files are read), so it is accepted and has no effect.
        self.dynamic_refresh = True
        self._tensors = {}
        self._collections = {}
        self._core_module = _load_core()

        begin, end = 0, -1
        if range_steps is not None:
            b, e = range_steps
            begin = 0 if b is None else int(b)
            end = -1 if e is None else int(e)
            if begin < 0 or (end != -1 and end <= begin):
                raise ex.SMDebugValueError(
                    f"range_steps={range_steps!r}: must be (begin, end) with 0 <= begin < end"
                )
        if end_delay is None:
            end_delay = _env_number("SMDEBUG_TRAINING_END_DELAY_REFRESH", 0.1, float)
        options = dict(
            range_begin=begin,
            range_end=end,
            incomplete_step_window=_env_number("SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW", 1000, int),
            refresh_interval=float(refresh_interval),
            end_delay=float(end_delay),
            use_inotify=bool(use_inotify),
        )
        self._core = self._open(path, options, timeout, poll)

    def _open(self, path, options, timeout, poll):
        core = self._core_module
        deadline = None if timeout is None else time.monotonic() + timeout
        # A reader may start before the training job creates its folder: wait for it too.
        while not os.path.isdir(path):
            if deadline is not None and time.monotonic() >= deadline:
                raise ex.TrialNotReady(path, timeout)
            time.sleep(poll)
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return core.Trial.open_when_ready(path, timeout=left, poll=poll, **options)
        except core.UnavailableError as e:
            raise ex.TrialNotReady(path, timeout) from e
        except core.NotFoundError as e:
            if e.detail == "MissingCollectionFiles" or os.path.exists(
                os.path.join(path, END_OF_JOB_FILE)
            ):
                raise ex.MissingCollectionFiles() from e
            raise
        except core.OutOfRangeError as e:
            # A collections file over its size bound (trial.md): a damaged trial, named.
            raise ex.TrialCorruptionError(str(e)) from e
        except core.Error as e:
            other = _errors.generic(core, e)
            if other is None:
                raise
            raise other from e

    def __repr__(self):
        return (
            f"<{self.__class__.__module__}.{self.__class__.__name__} object at {hex(id(self))}>:(\n"
            f"    name={self.name},\n"
            f"    path={self.path},\n"
            f"    steps={self.steps()},\n"
            f"    collections={list(self.collections().keys())},\n"
            f"    tensor_names={self.tensor_names()},\n"
            f")"
        )

    def __hash__(self):
        return hash((self.name, self.path))

    def __eq__(self, other):
        if not isinstance(other, Trial):
            return NotImplemented
        return (self.name, self.path) == (other.name, other.path)

    # Refreshing.

    def refresh_data(self):
        """Reads index files written since the last refresh. A damaged index file raises
        TrialCorruptionError once (naming it); the readable ones are loaded all the same."""
        core = self._core_module
        try:
            self._core.refresh()
        except core.Error as e:
            other = _errors.generic(core, e)
            if other is None:
                raise
            raise other from e

    def maybe_refresh(self, name=None):
        """Refreshes unless every step is loaded (or the last refresh is recent)."""
        self._core.maybe_refresh()

    @property
    def loaded_all_steps(self):
        """True once the end marker was seen and the final refresh done (refreshes first, as
        reading it after any smdebug query would)."""
        self._core.maybe_refresh()
        return self._core.loaded_all_steps

    @property
    def last_complete_step(self):
        """The last global step all workers wrote (-1 if none)."""
        self._core.maybe_refresh()
        return self._core.last_complete_step

    @property
    def num_workers(self):
        return self._core.num_workers

    def training_ended(self):
        """True if the training job wrote its end marker (training_job_end.ts)."""
        return self._core.training_ended()

    has_training_ended = training_ended

    def incomplete(self):
        """The trial's incomplete markers (``<trial>/incomplete_<worker>.json``), read afresh:
        one dict per worker that lost steps (a full disk, an I/O error, steps dropped by the queue
        policy), sorted by worker; an empty list when nothing was lost. Keys: ``worker``,
        ``path``, ``readable`` (False when the marker is empty, as on a disk with no room for its
        content, or cannot be read; ``problem`` says why and the counts are None), ``final``
        (written by ``close()``), ``steps_written``, ``steps_failed``, ``steps_dropped``,
        ``first_lost_step`` and ``first_error`` (path and errno text, or None). Each marker is
        read bounded (64 KiB, regular files only). See docs/formats/trial.md."""
        return self._core.incomplete()

    def closure_evaluations(self, step, worker=""):
        """trainscope's record of the optimizer steps given a closure at global `step` whose
        closure ran more than once (LBFGS): a list of ``{"optimizer": class name,
        "evaluations": [[loss tensor names saved by one call of the closure], ...]}`` in call
        order; empty when the step has none (and in trials written by smdebug). `worker`: ""
        for the first worker by name that recorded one. See docs/formats/index.md."""
        return self._core.closure_steps(int(step), str(worker))

    def model_calls(self, step, worker=""):
        """How many times the model was called in global `step` (trainscope's automatic mode
        counts a rollout's calls: reinforcement learning calls the model once per action and
        steps the optimizer once per episode), when twice or more; 0 when not recorded (one
        call, a step that saved nothing, a trial written by smdebug or a script's own hook
        without ``hook.step()``). `worker`: "" for the first worker by name that recorded it.
        See docs/formats/index.md, ``meta.model_calls``."""
        return self._core.model_calls(int(step), str(worker))

    # Tensors.

    def tensor(self, tname):
        if self.has_tensor(tname):
            t = self._tensors.get(tname)
            if t is None:
                t = self._tensors[tname] = Tensor(tname, self, cache=self.cache)
            return t
        raise ex.TensorUnavailable(tname)

    def has_tensor(self, tname):
        return self._core.has_tensor(tname)

    def tensor_names(
        self, show_prefixed_tensors=False, *, step=None, mode=ModeKeys.GLOBAL, regex=None,
        collection=None
    ):
        """Sorted tensor names (saved reductions fold onto their tensor), optionally only those of
        `step` (a step of `mode`), matching `regex` (re.search; a str or list of str) or in
        `collection` (a Collection or a name). Only one of regex and collection."""
        if regex is not None and collection is not None:
            raise ValueError("Only one of `regex` or `collection` can be passed to this method")
        mode = to_mode(mode)
        try:
            names = self._core.tensor_names(mode.value, step)
        except self._core_module.NotFoundError:
            names = []  # a step the mode never had
        if regex is not None:
            patterns = _flatten([regex])
            names = [n for n in names if any(re.search(p, n) for p in patterns)]
            if not names:
                logger.warning(f"No tensors matching the regex pattern:{regex} given were saved")
        elif collection is not None:
            coll = self.collection(_collection_name(collection))
            names = [n for n in names if coll.matches(n)]
            if not names:
                logger.warning(f"No tensors from the collection {coll.name} were saved")
        return sorted(names)

    def _tensors_with_regex(self, step, mode, regex):
        names = self.tensor_names(show_prefixed_tensors=True, step=step, mode=mode, regex=regex)
        return [self.tensor(n).value(step, mode=mode) for n in sorted(names, key=_natural_key)]

    def inputs(self, step, mode=ModeKeys.GLOBAL):
        names = self.tensor_names(show_prefixed_tensors=True, step=step, mode=mode,
                                  collection="inputs")
        return [self.tensor(n).value(step, mode=mode) for n in sorted(names, key=_natural_key)]

    def labels(self, step, mode=ModeKeys.GLOBAL):
        return self._tensors_with_regex(step, mode, "labels*")

    def predictions(self, step, mode=ModeKeys.GLOBAL):
        return self._tensors_with_regex(step, mode, "predictions*")

    # Steps and modes.

    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps=False):
        """Sorted complete steps (mode steps unless GLOBAL); all seen steps if
        show_incomplete_steps. The step of a damaged index file is not among them: a
        RuntimeWarning names each such file once (damaged_index_files() lists them)."""
        steps = list(self._core.steps(to_mode(mode).value, show_incomplete_steps))
        self._warn_damaged()
        return steps

    def damaged_index_files(self):
        """The index files found damaged so far, each as a message naming the file and what is
        wrong with it; their steps are not in this trial."""
        return list(self._core.damaged_index_files())

    def _warn_damaged(self):
        damaged = self._core.damaged_index_files()
        warned = self.__dict__.setdefault("_damaged_warned", 0)
        for message in damaged[warned:]:
            warnings.warn(f"trainscope: {message}: its step is left out of the trial's steps",
                          RuntimeWarning, stacklevel=3)
        self._damaged_warned = len(damaged)

    def modes(self):
        """The modes steps were saved in."""
        return [ModeKeys(m) for m in self._core.modes()]

    def mode(self, global_step):
        """The mode of a global step, or None if the step is unknown."""
        try:
            return ModeKeys(self._core.mode_of(global_step))
        except self._core_module.NotFoundError:
            return None

    def mode_step(self, global_step):
        """The mode step of a global step, or None if the step is unknown."""
        try:
            return self._core.mode_step(global_step)
        except self._core_module.NotFoundError:
            return None

    def mode_modestep(self, global_step):
        mode = self.mode(global_step)
        return (mode, self.mode_step(global_step)) if mode is not None else (None, None)

    def global_step(self, mode, mode_step):
        """The global step of a mode step, or None if unknown."""
        mode = to_mode(mode)
        if mode == ModeKeys.GLOBAL:
            return mode_step
        try:
            return self._core.global_step(mode.value, mode_step)
        except self._core_module.NotFoundError:
            return None

    def has_passed_step(self, step, mode=ModeKeys.GLOBAL):
        """StepState of a step: AVAILABLE (complete), UNAVAILABLE (skipped or past the end) or
        NOT_YET_AVAILABLE."""
        return StepState(self._core.has_passed_step(step, to_mode(mode).value))

    def wait_for_steps(self, required_steps, mode=ModeKeys.GLOBAL, timeout=None):
        """Blocks until every step in required_steps is AVAILABLE. Raises StepUnavailable for a
        skipped step, NoMoreData for a step past the end of training, and (our addition)
        TimeoutError after `timeout` seconds."""
        mode = to_mode(mode)
        deadline = None if timeout is None else time.monotonic() + timeout
        for step in required_steps:
            while True:
                state = self.has_passed_step(step, mode)
                if state == StepState.AVAILABLE:
                    break
                if state == StepState.UNAVAILABLE:
                    if not self.loaded_all_steps:
                        raise ex.StepUnavailable(step, mode)
                    all_steps = self.steps(mode=mode, show_incomplete_steps=True)
                    last_step = all_steps[-1] if all_steps else -1
                    if step < last_step:
                        raise ex.StepUnavailable(step, mode)
                    raise ex.NoMoreData(step, mode, last_step)
                if self.loaded_all_steps:  # nothing more will come
                    all_steps = self.steps(mode=mode, show_incomplete_steps=True)
                    raise ex.NoMoreData(step, mode, all_steps[-1] if all_steps else -1)
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"step {step} of mode {mode.name} not available after {timeout} s")
                wait = 0.5 if deadline is None else min(0.5, max(0.0, deadline - time.monotonic()))
                self._core.wait_for_change(wait)

    # Workers and collections.

    def workers(self):
        self._core.maybe_refresh()
        return list(self._core.workers())

    def collections(self):
        """{name: Collection} of the trial's collections files, plus any made by collection().
        The objects persist: a change to one (``include``, ``add_tensor_name``) is what later
        ``tensor_names(collection=...)`` calls use, as in smdebug."""
        for c in self._core.collections():
            if c["name"] not in self._collections:
                self._collections[c["name"]] = _collection_from_core(c)
        return self._collections

    def collection(self, coll_name):
        """The named Collection; one the trial lacks is created empty (and kept), as smdebug's."""
        coll = self._collections.get(coll_name)
        if coll is None:
            c = self._core.collection(coll_name)
            coll = _collection_from_core(c) if c is not None else Collection(coll_name)
            self._collections[coll_name] = coll
        return coll

    @property
    def last_index_token(self):
        """The index file of the last complete step (smdebug's token: that step's file of the
        last worker by name), or None before any step is complete."""
        step = self.last_complete_step
        workers = sorted(self.workers())
        if step < 0 or not workers:
            return None
        return os.path.join(self.path, "index", format(step // 1000, "09"),
                            f"{step:012d}_{workers[-1]}.json")

    # Profiler metrics (system/ and framework/ of the trial folder).

    def _metrics_reader(self):
        reader = self.__dict__.get("_profiler_reader")
        if reader is None:
            from .profiler.readers import MetricsReader

            reader = self._profiler_reader = MetricsReader(self.path)
        return reader

    def system_metrics(self, start_time=None, end_time=None, unit="us", *, start_step=None,
                       end_step=None, type=None, dimension=None, node_id=None):  # noqa: A002
        """System metrics of the trial (trainscope.profiler.SystemMetricEvent: timestamp_us,
        type, name, dimension, value, node_id; .timestamp in seconds), by time range
        [start_time, end_time) in epoch `unit` ("us", "ms", "s"), or by steps
        [start_step, end_step) (mode steps, located through the framework events). None
        means unbounded. Filters: type ("cpu", "gpu", "memory", ...), dimension
        ("CPUUtilization", ...), node_id ("algo-1")."""
        return self._metrics_reader().system_metrics(
            start_time, end_time, unit, start_step=start_step, end_step=end_step, type=type,
            dimension=dimension, node_id=node_id)

    def framework_metrics(self, start_time=None, end_time=None, unit="us", *, start_step=None,
                          end_step=None, phase=None, node_id=None, file_suffix=None):
        """Framework events of the trial (trainscope.profiler.FrameworkEvent with smdebug's
        TraceEvent attributes: event_name, event_phase, start_time, end_time, duration in epoch
        microseconds, pid, tid, node_id, event_args, step), overlapping [start_time, end_time)
        or of steps [start_step, end_step). phase: a prefix of the event's phase ("Step:",
        "Forward", "DataLoaderIter", ...)."""
        return self._metrics_reader().framework_metrics(
            start_time, end_time, unit, start_step=start_step, end_step=end_step, phase=phase,
            node_id=node_id, file_suffix=file_suffix)


class LocalTrial(Trial):
    """A trial in a local folder: ``LocalTrial(name, dirname, range_steps=None, parallel=True,
    check=False, index_mode=True, cache=False)`` as smdebug's (``path=`` is accepted for
    ``dirname``); the keywords after those are Trial's."""

    def __init__(self, name, dirname=None, *args, path=None, **kwargs):
        if dirname is None:
            dirname = path
        elif path is not None:
            raise TypeError("LocalTrial() takes dirname or path, not both")
        if dirname is None:
            raise TypeError("LocalTrial() missing the trial folder: pass dirname=")
        super().__init__(name, str(dirname), *args, **kwargs)


def _collection_from_core(c):
    import json

    d = dict(c)
    d["reduction_config"] = json.loads(c["reduction_config"] or "null")
    d["save_config"] = json.loads(c["save_config"] or "null")
    return Collection.from_dict(d)


def _collection_name(collection):
    if isinstance(collection, Collection):
        return collection.name
    if isinstance(collection, str):
        return collection
    if hasattr(collection, "name"):  # an smdebug Collection
        return collection.name
    raise TypeError(f"Invalid argument type for collection {collection.__class__}")


def _flatten(items):
    out = []
    for item in items:
        if isinstance(item, (list, tuple)):
            out.extend(_flatten(item))
        else:
            out.append(item)
    return out


def _natural_key(name):
    """Orders 'x_2' before 'x_10'."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def no_refresh(trials):
    """smdebug's analysis.utils.no_refresh: a context manager under which the trial (or list of
    trials) does not refresh. trainscope's reader refreshes only when asked for steps it does not
    have, so this only sets ``dynamic_refresh`` as smdebug's does."""
    from .rules.rule import _no_refresh

    return _no_refresh(trials if isinstance(trials, (list, tuple)) else [trials])
