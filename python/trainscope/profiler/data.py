"""ProfilerData: what a hook's profiler has captured so far (hook.get_profiler_data())."""

import collections
from typing import NamedTuple

USER_PHASE = "UserSpan"  # recorder.USER: the phase of ``hook.profile(name)`` spans


class Span(NamedTuple):
    """One recorded span: phase (row), name, start and duration in epoch microseconds, and the
    mode step it belongs to (-1 before the first step)."""

    phase: str
    name: str
    start_us: int
    dur_us: int
    step: int

    @property
    def end_us(self):
        return self.start_us + self.dur_us


class ProfilerData:
    """A snapshot of a hook's profiler.

    spans: every span recorded (newest 200000), oldest first.
    detailed_traces: paths of torch.profiler Chrome traces written so far.
    python_stats: folders of cProfile/pyinstrument stats written so far.
    system: system-metric events read back from the trial (when a sampler writes them).
    base_dir, node_id: where the files are and the node id in their names.
    events_recorded / events_written / events_dropped: the timeline writer's counters."""

    def __init__(self, spans, detailed_traces, python_stats, system, base_dir, node_id, counters):
        self.spans = [Span(*s) for s in spans]
        self.detailed_traces = list(detailed_traces)
        self.python_stats = list(python_stats)
        self.system = system
        self.base_dir = base_dir
        self.node_id = node_id
        self.events_recorded, self.events_written, self.events_dropped = counters

    def by_phase(self, phase):
        """Spans whose phase equals `phase` (or starts with it when it ends with ':')."""
        if phase.endswith(":"):
            return [s for s in self.spans if s.phase.startswith(phase)]
        return [s for s in self.spans if s.phase == phase]

    def summary(self):
        """{row: {"count", "total_us", "mean_us", "max_us"}} over the spans. A row is the
        span's phase ("Forward", "Optimizer", "Step:ModeKeys.TRAIN", ...), except that a user
        span (``with hook.profile("loss"):``) has a row of its own name ("loss"), so that
        several user spans are told apart."""
        acc = collections.defaultdict(list)
        for s in self.spans:
            acc[s.name if s.phase == USER_PHASE else s.phase].append(s.dur_us)
        return {p: {"count": len(v), "total_us": sum(v), "mean_us": sum(v) / len(v),
                    "max_us": max(v)} for p, v in acc.items()}

    def __repr__(self):
        return (f"<ProfilerData spans={len(self.spans)} detailed={len(self.detailed_traces)} "
                f"python_stats={len(self.python_stats)} system={len(self.system)}>")
