"""smdebug's low-level file API, over trainscope's writer: FileWriter (one step of one worker's
tensors into a trial folder, as smdebug's tests build their inputs), and the path rules of
IndexFileLocationUtils and TensorFileLocation (smdebug's trial layout, docs/formats/trial.md).

FileWriter writes with trainscope._core.TrialWriter, so the files are trainscope's (smdebug's
format, with a crc32c per index entry); it does not write the end marker.
Not thread-safe: one FileWriter per thread.
"""

import os

from .._native import load as _load_core
from ..exceptions import SMDebugNotImplementedError, SMDebugRuntimeError, SMDebugValueError
from ..modes import ModeKeys, to_mode
from .helpers import make_numpy_array, match_inc

STEP_NUMBER_FORMATTING_LENGTH = "012"


class IndexFileLocationUtils:
    """Where the index file of a step lives:
    index/<step // 1000, 9 digits>/<step, 12>_<worker>.json."""

    MAX_INDEX_FILE_NUM_IN_INDEX_PREFIX = 1000

    @staticmethod
    def get_index_prefix_for_step(step_num):
        return format(step_num // IndexFileLocationUtils.MAX_INDEX_FILE_NUM_IN_INDEX_PREFIX, "09")

    @staticmethod
    def next_index_prefix_for_step(step_num):
        per_prefix = IndexFileLocationUtils.MAX_INDEX_FILE_NUM_IN_INDEX_PREFIX
        return format(step_num // per_prefix + 1, "09")

    @staticmethod
    def get_index_key_for_step(trial_prefix, step_num, worker_name):
        return os.path.join(trial_prefix, "index",
                            IndexFileLocationUtils.get_index_prefix_for_step(step_num),
                            f"{step_num:012d}_{worker_name}.json")

    @staticmethod
    def get_step_from_idx_filename(index_file_name):
        return int(os.path.basename(index_file_name).split("_", 1)[0])

    parse_step_from_index_file_name = get_step_from_idx_filename

    @staticmethod
    def get_index_path(path):
        return os.path.join(path, "index")

    @staticmethod
    def get_prefix_from_index_file(index_file):
        """The trial folder of an index file's path ('/a/b/index/000000000/x.json' -> '/a/b')."""
        head, sep, _ = str(index_file).rpartition("/index/")
        if not sep:
            raise SMDebugValueError(f"{index_file} is not inside an index/ folder")
        return head


class TensorFileLocation:
    """Where the event file of a step lives: events/<step, 12 digits>/<step>_<worker>.tfevents."""

    def __init__(self, step_num, worker_name):
        self.step_num = int(step_num)
        self.worker_name = worker_name
        self.type = "events"

    def get_step_num_str(self):
        return format(self.step_num, STEP_NUMBER_FORMATTING_LENGTH)

    def get_filename(self):
        return f"{self.get_step_num_str()}_{self.worker_name}.tfevents"

    @staticmethod
    def get_dir(trial_dir):
        return os.path.join(trial_dir, "events")

    def get_file_location(self, trial_dir=""):
        prefix = self.get_dir(trial_dir) if trial_dir else self.type
        return os.path.join(prefix, self.get_step_num_str(), self.get_filename())

    @classmethod
    def get_step_dir_path(cls, trial_dir, step_num):
        return os.path.join(cls.get_dir(trial_dir),
                            format(int(step_num), STEP_NUMBER_FORMATTING_LENGTH))


class FileWriter:
    """Writes the tensors of one step of one worker: FileWriter(trial_dir, worker, step=0);
    write_tensor(tdata, tname, mode=ModeKeys.GLOBAL, mode_step=None)...; close() (or use it as a
    context manager). The step's event and index files appear at close."""

    def __init__(self, trial_dir, worker, step=0, wtype="events", mode=ModeKeys.GLOBAL,
                 max_queue=10, flush_secs=120, verbose=False, write_checksum=False):
        if wtype != "events":
            raise SMDebugNotImplementedError(
                f"FileWriter(wtype={wtype!r}): only 'events' is supported (TensorBoard files: "
                "trainscope's TensorBoard export)")
        self.trial_dir = str(trial_dir)
        self.worker = worker
        self.step = int(step)
        self.wtype = wtype
        self.mode = mode
        self.event_file_path = TensorFileLocation(self.step, worker).get_file_location(
            self.trial_dir)
        self._writer = _load_core().TrialWriter(self.trial_dir, worker=worker,
                                                write_end_marker=False, quiet=True, io_threads=1)
        self._step_open = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _begin(self, mode, mode_step):
        if self._step_open:
            return
        mode = to_mode(ModeKeys.GLOBAL if mode is None else mode)
        mode_step = self.step if mode_step is None else int(mode_step)
        self._writer.begin_step(self.step, mode.value, mode_step)
        self._step_open = True

    def write_tensor(self, tdata, tname, write_index=True, mode=ModeKeys.GLOBAL, mode_step=None,
                     timestamp=None):
        """Adds a tensor (numpy array, scalar, list, tuple, strings) to the step. The step's mode
        and mode step are those of its first tensor or shape."""
        self._begin(mode, mode_step)
        self._writer.add_tensor(tname, make_numpy_array(tdata))

    def write_shape(self, name, shape, mode=ModeKeys.GLOBAL, mode_step=None, original_name=None):
        self._begin(mode, mode_step)
        self._writer.add_shape(name, [int(d) for d in shape])

    def flush(self):
        """Nothing to do: the step's files are written whole at close()."""

    def close(self):
        if self._writer is None:
            return
        if self._step_open:
            self._writer.end_step()
        self._writer.close()
        self._writer = None

    def name(self):
        """The path of the step's event file."""
        if not self._step_open:
            raise SMDebugRuntimeError(
                "Writer hasn't been initialized yet. It will be initialized when the first "
                "tensor or summary is written.")
        return self.event_file_path


class FileReader:
    """smdebug's reader of one event file (smdebug.core.reader): FileReader(path) then
    read_tensors() or read_events(regex_list=None), over trainscope's ReadEventFile
    (trainscope/event_file.h, one pass over the file; every record's framing is checked, so
    `check` is accepted and changes nothing). Trials are better read with create_trial."""

    def __init__(self, fname, wtype="tfevent"):
        if wtype != "tfevent":
            raise SMDebugNotImplementedError(
                f"FileReader(wtype={wtype!r}): only the 'tfevent' format is supported")
        self.fname = str(fname)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def _tensors(self):
        core = _load_core()
        try:
            return core.read_event_file(self.fname)
        except core.NotFoundError:
            raise FileNotFoundError(f"FileReader: no event file at {self.fname}") from None

    def read_tensors(self, check="minimal"):
        """Yields (name, step, numpy value, ModeKeys mode, mode_step) for every tensor."""
        for name, step, _, mode, mode_step, value in self._tensors():
            yield name, step, value, ModeKeys(mode), mode_step

    def read_events(self, check="minimal", regex_list=None):
        """[{"timestamp", "step", "name", "value"}] of every tensor whose name one of
        `regex_list` finds (re.search; None: all), in file order."""
        out = []
        for name, step, wall_time, _, _, value in self._tensors():
            if regex_list is None or match_inc(name, regex_list):
                out.append({"timestamp": wall_time, "step": step, "name": name, "value": value})
        return out
