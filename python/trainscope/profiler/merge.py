"""smdebug's MergedTimeline (smdebug.profiler.analysis.utils.merge_timelines) over trainscope's
timeline merger (trace_merge.h, the `trainscope timeline` command): one Chrome trace of a trial's
framework spans, torch.profiler traces, system metrics (as counters) and rule findings in a time
or step window, which Perfetto and chrome://tracing open.

Differences from smdebug, on purpose: the output is the object form ({"traceEvents": [...]}),
docs/formats/timeline.md's "Merged trace"; system metrics are counters, all of them, whatever
sys_metrics_filter holds (an empty one leaves them out); rule findings are included.
A step window runs from the start of step `start` to the end of step `end` (both included).
"""

import os
from enum import Enum

from .._native import load as _load_core
from .readers import MetricsReader

MERGEDTIMELINE_SUFFIX = "merged_timeline.json"
# File suffixes of smdebug's filter that trainscope's merger reads, by input kind.
_FRAMEWORK_SUFFIXES = ("pythontimeline.json", "model_timeline.json")
_DETAILED_SUFFIXES = ("trace.json.gz", "trace.json", "pt.trace.json")


class MergeUnit(Enum):
    """Unit of merge_timeline's window."""

    TIME = "time"
    STEP = "step"


class MergedTimeline:
    """Merges a local trial's profiler data into one Chrome trace file.

    path: the trial folder (with framework/ and system/); file_suffix_filter: the framework
    file suffixes to merge ("pythontimeline.json", "model_timeline.json", "trace.json.gz"; None:
    all); output_directory: where the merged file goes (None: path)."""

    def __init__(self, path, file_suffix_filter=None, output_directory=None):
        if str(path).startswith("s3://"):
            from ..exceptions import SMDebugNotImplementedError

            raise SMDebugNotImplementedError(f"{path}: s3:// trials are not supported yet")
        self.path = str(path)
        self.out_dir = str(output_directory) if output_directory is not None else self.path
        self.file_suffix_filter = file_suffix_filter
        self.last_result = None

    def file_name(self, end_timestamp_in_us):
        """<out_dir>/<end time>_<node id>_merged_timeline.json, smdebug's name."""
        node = _load_core().default_timeline_node_id()
        return os.path.join(self.out_dir,
                            f"{int(round(end_timestamp_in_us))}_{node}_{MERGEDTIMELINE_SUFFIX}")

    def _includes(self, suffixes):
        f = self.file_suffix_filter
        return f is None or any(s in suffixes for s in ([f] if isinstance(f, str) else f))

    def merge_timeline(self, start, end, unit=MergeUnit.TIME, sys_metrics_filter=None):
        """Writes the merged trace of [start, end) (epoch microseconds) or of steps start..end
        (unit MergeUnit.STEP or "step") and returns its path. sys_metrics_filter: falsy leaves
        the system metrics out (smdebug's default, {"lowgpu": ()}, keeps them)."""
        if sys_metrics_filter is None:
            sys_metrics_filter = {"lowgpu": ()}
        if unit in (MergeUnit.STEP, "step"):
            start_us, end_us = MetricsReader(self.path).step_time_range(int(start), int(end) + 1)
        else:
            start_us, end_us = int(start), int(end)
        os.makedirs(self.out_dir, exist_ok=True)
        filename = self.file_name(end_us)
        self.last_result = _load_core().merge_timeline(
            self.path, filename, start_us, end_us,
            include_system=bool(sys_metrics_filter),
            include_framework=self._includes(_FRAMEWORK_SUFFIXES),
            include_detailed=self._includes(_DETAILED_SUFFIXES), include_rules=True)
        return filename
