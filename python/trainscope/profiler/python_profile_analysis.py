"""Analysis of Python profiler stats (smdebug's PythonProfileAnalysis, cProfileAnalysis,
PyinstrumentAnalysis; smdebug.profiler.analysis.python_profile_analysis aliases this module).

    analysis = cProfileAnalysis(local_profile_dir="<trial>/framework/pytorch/cprofile")
    analysis.list_profile_stats()                    # one row per stats file (pandas)
    stats = analysis.fetch_profile_stats_by_step(5)  # step 5's intervals, added together
    stats.print_top_n_functions(Metrics.CUMULATIVE_TIME, n=10)
    stats.get_function_stats()                       # the table, one row per function
    analysis.fetch_profile_stats_by_time(t0, t1)     # epoch seconds
    analysis.fetch_profile_stats_by_training_phase() # {(start mode, end mode): stats}
    analysis.fetch_profile_stats_by_job_phase()      # initialization, training_loop, finalization

``local_profile_dir`` may also be the trial folder itself. A fetch returns None (and says so)
when no interval matches; ``refresh_stats=True`` (the default) rescans the folder first.
Not thread-safe.
"""

import json
import os
import pstats

from .python_profiler import (CPROFILE_NAME, PYINSTRUMENT_HTML_FILENAME,
                              PYINSTRUMENT_JSON_FILENAME, PYINSTRUMENT_NAME, PythonProfileModes,
                              StepPhase, python_profile_mode_to_str)
from .python_stats import (LocalPythonStatsReader, PyinstrumentStepStats, S3PythonStatsReader,
                           StepPythonProfileStats, cProfileStats)

CONVERT_TO_MICROSECS = 1_000_000


class PythonProfileAnalysis:
    """The intervals of one profiler (``name``; "" for every profiler) under a folder."""

    name = ""

    def __init__(self, local_profile_dir="/tmp/python_stats", s3_path=None):
        if s3_path:
            self.python_stats_reader = S3PythonStatsReader(local_profile_dir, s3_path)
        else:
            self.python_stats_reader = LocalPythonStatsReader(local_profile_dir)
        self.python_profile_stats = []
        self._refresh_python_profile_stats(True)

    def _refresh_python_profile_stats(self, refresh_stats):
        if refresh_stats:
            records = self.python_stats_reader.load_python_profile_stats()
            self.python_profile_stats = [r for r in records
                                         if not self.name or r.profiler_name == self.name]

    def _stats_of_node(self, node_id):
        """The records of one node; "any": the node of the first record."""
        if not self.python_profile_stats:
            return []
        if node_id == "any":
            node_id = self.python_profile_stats[0].node_id
        return [r for r in self.python_profile_stats if r.node_id == node_id]

    def _select(self, keep, node_id, refresh_stats):
        self._refresh_python_profile_stats(refresh_stats)
        return self._aggregate_stats([r for r in self._stats_of_node(node_id) if keep(r)])

    def _aggregate_stats(self, requested_stats):
        """The records, made into the profiler's stats (overridden)."""
        return requested_stats

    def fetch_profile_stats_by_step(self, start_step, end_step=None, mode=PythonProfileModes.TRAIN,
                                    start_phase=StepPhase.STEP_START,
                                    end_phase=StepPhase.STEP_END, node_id="any",
                                    refresh_stats=True):
        """The intervals within ``start_step`` (at ``start_phase``) to ``end_step`` (default
        ``start_step``, at ``end_phase``) that start and end in ``mode``. Steps are global."""
        end_step = start_step if end_step is None else end_step
        return self._select(
            lambda r: (r.in_step_interval(start_step, end_step, start_phase, end_phase) and
                       r.has_start_and_end_mode(mode, mode)), node_id, refresh_stats)

    def fetch_profile_stats_by_time(self, start_time_since_epoch_in_secs,
                                    end_time_since_epoch_in_secs, node_id="any",
                                    refresh_stats=True):
        """The intervals that overlap [start, end] (epoch seconds)."""
        start_us = start_time_since_epoch_in_secs * CONVERT_TO_MICROSECS
        end_us = end_time_since_epoch_in_secs * CONVERT_TO_MICROSECS
        return self._select(lambda r: r.in_time_interval(start_us, end_us), node_id,
                            refresh_stats)

    def fetch_profile_stats_between_modes(self, start_mode, end_mode, node_id="any",
                                          refresh_stats=True):
        """The intervals that start in ``start_mode`` and end in ``end_mode``."""
        return self._select(lambda r: r.has_start_and_end_mode(start_mode, end_mode), node_id,
                            refresh_stats)

    def fetch_pre_step_zero_profile_stats(self, node_id="any", refresh_stats=True):
        """The interval before the first step (trainscope's hook profiles only the configured
        steps, so its trials have none: None)."""
        return self._select(lambda r: r.has_pre_step_zero_profile_stats(), node_id,
                            refresh_stats)

    def fetch_post_hook_close_profile_stats(self, node_id="any", refresh_stats=True):
        """The interval after the hook's close (none in trainscope's trials: None)."""
        return self._select(lambda r: r.has_post_hook_close_profile_stats(), node_id,
                            refresh_stats)

    def list_profile_stats(self, refresh_stats=True):
        """One row per stats file (pandas), oldest first: profiler_name, framework, node_id,
        start_mode, start_step, start_phase, start_time_since_epoch_in_micros, end_mode,
        end_step, end_phase, end_time_since_epoch_in_micros, stats_path (modes as names:
        "train", ...; phases as StepPhase; start_step -1 before step 0, end_step inf after the
        close). An empty DataFrame when there is none."""
        import pandas as pd

        self._refresh_python_profile_stats(refresh_stats)
        if not self.python_profile_stats:
            print("No python profiler stats were found.")
            return pd.DataFrame()
        df = pd.DataFrame([dict(vars(r)) for r in self.python_profile_stats])
        df["start_mode"] = df["start_mode"].map(python_profile_mode_to_str)
        df["end_mode"] = df["end_mode"].map(python_profile_mode_to_str)
        return df

    def list_available_node_ids(self, refresh_stats=True):
        """The nodes (processes) that have stats, sorted."""
        self._refresh_python_profile_stats(refresh_stats)
        return sorted({r.node_id for r in self.python_profile_stats})


class cProfileAnalysis(PythonProfileAnalysis):  # noqa: N801 (smdebug's name)
    """cProfile's intervals; a fetch returns one cProfileStats of the intervals added together."""

    name = CPROFILE_NAME

    def _aggregate_stats(self, requested_stats):
        if not requested_stats:
            print("No python profiler stats were found for the requested interval.")
            return None
        ps = pstats.Stats()
        for r in requested_stats:
            ps.add(r.stats_path)
        return cProfileStats(ps)

    def fetch_profile_stats_by_training_phase(self, node_id="any", refresh_stats=True):
        """{(start mode, end mode): cProfileStats} for every pair of PythonProfileModes that has
        intervals, e.g. (TRAIN, TRAIN), (TRAIN, EVAL), (EVAL, EVAL)."""
        self._refresh_python_profile_stats(refresh_stats)
        records = self._stats_of_node(node_id)
        out = {}
        for pair in sorted({(r.start_mode, r.end_mode) for r in records}):
            out[pair] = self._aggregate_stats(
                [r for r in records if r.has_start_and_end_mode(*pair)])
        return out

    def fetch_profile_stats_by_job_phase(self, node_id="any", refresh_stats=True):
        """{"initialization": before step 0, "training_loop": every interval of the training and
        evaluation steps, "finalization": after the close}; "training_loop" is always there (an
        empty cProfileStats when no step was profiled), the two others when they have stats."""
        phases = self.fetch_profile_stats_by_training_phase(node_id, refresh_stats)
        out = {}
        loop = pstats.Stats()
        for (start_mode, end_mode), stats in phases.items():
            if start_mode == PythonProfileModes.PRE_STEP_ZERO:
                out["initialization"] = stats
            elif end_mode == PythonProfileModes.POST_HOOK_CLOSE:
                out["finalization"] = stats
            else:
                loop.add(stats.ps)
        out["training_loop"] = cProfileStats(loop)
        return out


class PyinstrumentAnalysis(PythonProfileAnalysis):
    """pyinstrument's intervals; a fetch returns a list of PyinstrumentStepStats, one per
    interval, oldest first."""

    name = PYINSTRUMENT_NAME

    def _aggregate_stats(self, requested_stats):
        if not requested_stats:
            print("No python profiler stats were found for the requested interval.")
            return None
        folders = {}  # stats folder -> {file name: path}, in the records' order
        for r in requested_stats:
            folders.setdefault(os.path.dirname(r.stats_path), {})[
                os.path.basename(r.stats_path)] = r.stats_path
        out = []
        for files in folders.values():
            json_path = files.get(PYINSTRUMENT_JSON_FILENAME)
            if json_path is None:
                continue
            with open(json_path) as f:
                json_stats = json.load(f)
            out.append(PyinstrumentStepStats(files.get(PYINSTRUMENT_HTML_FILENAME), json_stats))
        return out


__all__ = [
    "CONVERT_TO_MICROSECS", "PyinstrumentAnalysis", "PythonProfileAnalysis", "PythonProfileModes",
    "StepPhase", "StepPythonProfileStats", "cProfileAnalysis",
]
