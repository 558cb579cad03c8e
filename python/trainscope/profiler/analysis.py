"""smdebug's profiler-analysis API over trainscope's readers (readers.py): the readers
SageMaker's profiler notebooks use (LocalSystemMetricsReader, LocalAlgorithmMetricsReader,
TimeUnits) and PandasFrame, which gives the system and framework metrics as pandas DataFrames
with smdebug's column names.

PandasFrame needs pandas (pip install pandas); the readers do not. Times are epoch microseconds
unless a unit is given; the DataFrames' ``timestamp_us`` / ``start_time_us`` / ``end_time_us``
count from the trial's first profiler file, as smdebug's do. Not thread-safe.
"""

import datetime
from enum import Enum

from .readers import MetricsReader


class TimeUnits(Enum):
    SECONDS = 1
    MILLISECONDS = 2
    MICROSECONDS = 3
    NANOSECONDS = 4


def _to_us(value, unit):
    if value is None:
        return None
    if isinstance(unit, str):
        unit = {"s": TimeUnits.SECONDS, "ms": TimeUnits.MILLISECONDS,
                "us": TimeUnits.MICROSECONDS, "ns": TimeUnits.NANOSECONDS}[unit]
    scale = {TimeUnits.SECONDS: 1e6, TimeUnits.MILLISECONDS: 1e3, TimeUnits.MICROSECONDS: 1,
             TimeUnits.NANOSECONDS: 1e-3}[unit]
    return int(value * scale)


def us_since_epoch_to_human_readable_time(us_since_epoch):
    """'2020-06-18T21:30:02:123456' (UTC), smdebug's format."""
    dt = datetime.datetime.fromtimestamp(us_since_epoch / 1e6, tz=datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S:%f")


class _LocalReader:
    def __init__(self, trial_dir, use_in_memory_cache=False):
        self.trial_dir = str(trial_dir)
        self._reader = MetricsReader(self.trial_dir)

    def refresh_event_file_list(self):
        """Nothing to do: every query lists the folders again."""

    def get_timestamp_of_first_available_file(self):
        """Epoch microseconds of the trial's earliest profiler file (0 when there is none)."""
        return self._reader.first_timestamp_us() or 0


class LocalSystemMetricsReader(_LocalReader):
    """The system metrics of a trial folder (system/), as smdebug's reader of that name."""

    def get_events(self, start_time, end_time, unit=TimeUnits.MICROSECONDS, event_type=None,
                   file_suffix_filter=None):
        """System-metric events (SystemMetricEvent: timestamp, type, name, dimension, value,
        node_id) with start_time <= timestamp < end_time; event_type filters by type."""
        return self._reader.system_metrics(_to_us(start_time, unit), _to_us(end_time, unit), "us",
                                           type=event_type)

    def get_events_by_step(self, start_step, end_step, event_type=None, file_suffix_filter=None):
        return self._reader.system_metrics(start_step=start_step, end_step=end_step,
                                           type=event_type)

    def get_timestamp_of_latest_available_file(self):
        """Epoch microseconds of the latest system metric (0 when there is none)."""
        events = self._reader.system_metrics()
        return max((e.timestamp_us for e in events), default=0)


class LocalAlgorithmMetricsReader(_LocalReader):
    """The framework events of a trial folder (framework/), as smdebug's reader of that name."""

    def get_events(self, start_time, end_time, unit=TimeUnits.MICROSECONDS, event_type=None,
                   file_suffix_filter=None):
        """Framework events overlapping [start_time, end_time); event_type filters by phase
        (a prefix: "Step:", "Forward"), file_suffix_filter by file kind."""
        return self._reader.framework_metrics(_to_us(start_time, unit), _to_us(end_time, unit),
                                              "us", phase=event_type,
                                              file_suffix=file_suffix_filter)

    def get_events_by_step(self, start_step, end_step, event_type=None, file_suffix_filter=None):
        return self._reader.framework_metrics(start_step=start_step, end_step=end_step,
                                              phase=event_type, file_suffix=file_suffix_filter)

    def get_timestamp_of_latest_available_file(self):
        """Epoch microseconds of the end of the latest framework event (0 when there is none)."""
        events = self._reader.framework_metrics()
        return max((e.end_time for e in events), default=0)


SYSTEM_COLUMNS = ["timestamp", "timestamp_us", "value", "system_metric", "dimension", "nodeID",
                  "type"]
FRAMEWORK_COLUMNS = ["start_time", "end_time", "start_time_us", "end_time_us", "tid", "pid",
                     "framework_metric", "step", "bytes", "process", "nodeID"]


class PandasFrame:
    """System and framework metrics of a local trial as pandas DataFrames (smdebug's PandasFrame).

    System columns: timestamp (text, UTC), timestamp_us, value, system_metric (e.g. "cpu0",
    "gpu0"), dimension ("CPUUtilization", ...), nodeID, type. Framework columns: start_time,
    end_time (text), start_time_us, end_time_us, tid, pid, framework_metric (the event's
    name), step (-1 when the event has none), bytes (-1 unless a data-loader event says),
    process (the event's phase, e.g. "Step:ModeKeys.TRAIN"), nodeID.
    """

    def __init__(self, path, use_in_memory_cache=False, scan_interval=5000000000):
        if str(path).startswith("s3://"):
            from ..exceptions import SMDebugNotImplementedError

            raise SMDebugNotImplementedError(f"{path}: s3:// trials are not supported yet")
        import pandas  # noqa: F401 (fails early, naming the missing package)

        self.path = str(path)
        self.interval = scan_interval
        self.system_metrics_reader = LocalSystemMetricsReader(self.path)
        self.framework_metrics_reader = LocalAlgorithmMetricsReader(self.path)
        self.system_metrics = []
        self.framework_metrics = []
        self.start_time = self.system_metrics_reader.get_timestamp_of_first_available_file()

    def get_all_system_metrics(self, selected_system_metrics=()):
        """Every system metric (only those named in selected_system_metrics, if given)."""
        sys_df, _ = self.get_profiler_data_by_time(
            None, None, selected_system_metrics=selected_system_metrics,
            get_framework_metrics=False)
        return sys_df

    def get_all_framework_metrics(self, selected_framework_metrics=()):
        """Every framework event (only those whose name or phase is in
        selected_framework_metrics, if given)."""
        _, fw_df = self.get_profiler_data_by_time(
            None, None, selected_framework_metrics=selected_framework_metrics,
            get_system_metrics=False)
        return fw_df

    def get_profiler_data_by_time(self, start_time_us, end_time_us, cache_metrics=False,
                                  selected_framework_metrics=(), selected_system_metrics=(),
                                  get_framework_metrics=True, get_system_metrics=True):
        """(system DataFrame, framework DataFrame) of [start_time_us, end_time_us) in epoch
        microseconds (None: unbounded). cache_metrics: also return the rows of earlier calls."""
        import pandas as pd

        system_rows = []
        if get_system_metrics:
            for e in self.system_metrics_reader.get_events(start_time_us, end_time_us):
                if selected_system_metrics and e.name not in selected_system_metrics:
                    continue
                system_rows.append([us_since_epoch_to_human_readable_time(e.timestamp_us),
                                    e.timestamp_us, e.value, e.name, e.dimension, e.node_id,
                                    e.type])
            if cache_metrics:
                self.system_metrics.extend(system_rows)
                system_rows = self.system_metrics
        framework_rows = []
        if get_framework_metrics:
            for e in self.framework_metrics_reader.get_events(start_time_us, end_time_us):
                if selected_framework_metrics and (
                        e.event_name not in selected_framework_metrics
                        and e.event_phase not in selected_framework_metrics):
                    continue
                args = e.event_args or {}
                step = args.get("step_num", e.step if e.step is not None else -1)
                name = args.get("layer_name", args.get("name", e.event_name))
                framework_rows.append([
                    us_since_epoch_to_human_readable_time(e.start_time),
                    us_since_epoch_to_human_readable_time(e.end_time), e.start_time, e.end_time,
                    e.tid, e.pid, name, int(step), args.get("bytes_fetched", -1), e.event_phase,
                    e.node_id])
            if cache_metrics:
                self.framework_metrics.extend(framework_rows)
                framework_rows = self.framework_metrics
        sys_df = pd.DataFrame(system_rows, columns=SYSTEM_COLUMNS)
        sys_df["timestamp_us"] = sys_df["timestamp_us"] - self.start_time
        fw_df = pd.DataFrame(framework_rows, columns=FRAMEWORK_COLUMNS)
        fw_df["start_time_us"] = fw_df["start_time_us"] - self.start_time
        fw_df["end_time_us"] = fw_df["end_time_us"] - self.start_time
        return sys_df[~sys_df.duplicated()], fw_df[~fw_df.duplicated()]

    def get_profiler_data_by_step(self, start_step, end_step, cache_metrics=False):
        """(system DataFrame, framework DataFrame) of steps start_step..end_step (both
        included): the framework events of those steps and the system metrics of their time."""
        sys_df = self.get_all_system_metrics()
        fw_df = self.get_all_framework_metrics()
        fw_df = fw_df[fw_df["step"].between(start_step, end_step)]
        start, end = fw_df["start_time_us"].min(), fw_df["end_time_us"].max()
        return sys_df[sys_df["timestamp_us"].between(start, end)], fw_df
