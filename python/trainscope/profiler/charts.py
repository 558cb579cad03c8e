"""The notebook charts of smdebug's profiler analysis (smdebug.profiler.analysis.notebook_utils),
drawn with Bokeh over trainscope's readers (analysis.py): StepHistogram, StepTimelineChart,
MetricsHistogram, Heatmap and TimelineCharts, with smdebug's constructor signatures and the
methods its profiler notebooks call (plot, update_data, clear, plot_detailed_profiler_data).

Each chart builds Bokeh figures whose ColumnDataSources hold the trial's values (``sources``,
``source``); in a Jupyter kernel it also shows them (``bokeh.io.show(..., notebook_handle=True)``,
kept in ``target``); elsewhere it only builds them (``figure``), to render with
``bokeh.embed.file_html`` or ``json_item``. Bokeh is needed only here (pip install bokeh).

Differences from smdebug, on purpose: durations are in seconds and the axes say so (smdebug
divides microseconds by 10**6 and labels them "ms"); the step histograms count every step of the
range (smdebug drops the last one and clips above median + 2 std); the step timeline keeps the
first step (smdebug drops it). Readers' times are epoch microseconds, as smdebug's. Not
thread-safe.
"""

import re

import numpy as np

MICROS = 1_000_000.0


def _bokeh():
    try:
        import bokeh.layouts
        import bokeh.models
        import bokeh.palettes
        import bokeh.plotting
    except ImportError as e:
        raise ImportError(
            f"the profiler's notebook charts need Bokeh ({e}): pip install bokeh") from e
    return bokeh


def _in_notebook():
    try:
        from IPython import get_ipython  # noqa: PLC0415
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _show(obj):
    """Shows obj in a Jupyter kernel (returns the notebook handle); elsewhere returns None."""
    if not _in_notebook():
        return None
    from bokeh.io import output_notebook, show  # noqa: PLC0415

    output_notebook(hide_banner=True)
    return show(obj, notebook_handle=True)


def _push(target):
    if target is not None:
        from bokeh.io import push_notebook  # noqa: PLC0415

        push_notebook(handle=target)


def _select(patterns, names, anchored_any=False):
    """The names that a regex of patterns finds (re.search), in first-seen order."""
    out = []
    for p in patterns:
        r = re.compile(r".*" + p + r".*" if anchored_any else p)
        out.extend(n for n in names if r.search(n) and n not in out)
    return out


def _histogram(values, bins=50):
    """(counts, edges) over [min, max] of values, every value counted."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.zeros(0, dtype=int), np.zeros(1)
    lo, hi = float(values.min()), float(values.max())
    if hi <= lo:
        hi = lo + max(abs(lo) * 1e-3, 1e-9)
    return np.histogram(values, bins=bins, range=(lo, hi))


class StepHistogram:
    """Histograms of the durations (seconds) of framework events per phase ("Step:ModeKeys.TRAIN",
    "Forward", ...), one figure each; ``step_metrics`` maps "<phase>-nodeid:<node>" (or the
    phase, show_workers=False) to its durations, ``sources`` to its ColumnDataSource (top, left,
    right)."""

    def __init__(self, metrics_reader, width=500):
        self.metrics_reader = metrics_reader
        self.last_timestamp = metrics_reader.get_timestamp_of_latest_available_file()
        self.step_metrics = {}
        self.sources = {}
        self.width = width
        self.select_metrics = []
        self.show_workers = True
        self.figure = None
        self.target = None

    def _key(self, event):
        if self.show_workers:
            return f"{event.event_phase}-nodeid:{event.node_id}"
        return event.event_phase

    def _create_step_metrics(self, all_events, step_metrics=None):
        step_metrics = {} if step_metrics is None else step_metrics
        for event in all_events:
            step_metrics.setdefault(self._key(event), []).append(event.duration / MICROS)
        keep = _select(self.select_metrics, list(step_metrics))
        return {k: step_metrics[k] for k in keep}

    def plot(self, starttime=0, endtime=None,
             select_metrics=("Step:ModeKeys", "Forward-node", r"Backward\(post-forward\)-node"),
             show_workers=True):
        """Draws the histograms of the events in [starttime, endtime) (epoch microseconds;
        endtime None: the latest event) whose key matches a regex of select_metrics."""
        if endtime is None:
            endtime = self.metrics_reader.get_timestamp_of_latest_available_file() + 1
        self.last_timestamp = endtime
        self.select_metrics = list(select_metrics)
        self.show_workers = show_workers
        events = self.metrics_reader.get_events(starttime, endtime)
        self.step_metrics = self._create_step_metrics(events)
        self.create_plot(step_metrics=self.step_metrics)
        return self.figure

    def clear(self):
        self.step_metrics = {}
        self.sources = {}

    def create_plot(self, step_metrics=None):
        bokeh = _bokeh()
        step_metrics = self.step_metrics if step_metrics is None else step_metrics
        figures = []
        self.sources = {}
        for metric, values in step_metrics.items():
            p = bokeh.plotting.figure(height=350, width=450, title=metric)
            counts, edges = _histogram(values)
            source = bokeh.models.ColumnDataSource(
                data=dict(top=counts, left=edges[:-1], right=edges[1:]))
            self.sources[metric] = source
            p.quad(top="top", bottom=0, left="left", right="right", source=source,
                   fill_color="navy", line_color="white", fill_alpha=0.5)
            p.y_range.start = 0
            p.xaxis.axis_label = metric + " duration in s"
            p.yaxis.axis_label = "Occurrences"
            figures.append(p)
        self.figure = bokeh.layouts.gridplot(figures, ncols=4) if figures else None
        if self.figure is not None:
            self.target = _show(self.figure)

    def update_data(self, current_timestamp):
        """Adds the events that start in [last update, current_timestamp) to the histograms
        (the reader also returns those that only overlap it: they were counted already)."""
        events = [e for e in self.metrics_reader.get_events(self.last_timestamp,
                                                            current_timestamp)
                  if e.start_time >= self.last_timestamp]
        self.last_timestamp = current_timestamp
        self.step_metrics = self._create_step_metrics(events, self.step_metrics)
        for metric, values in self.step_metrics.items():
            if metric in self.sources:
                counts, edges = _histogram(values)
                self.sources[metric].data = dict(top=counts, left=edges[:-1], right=edges[1:])
        _push(self.target)


def _step_rows(events):
    rows, names = [], []
    for e in events:
        if e.event_name.startswith("Step"):
            step = e.event_args.get("step_num", e.step)
            if step is None:
                continue
            rows.append([e.start_time / MICROS, e.duration / MICROS, int(step)])
            names.append(e.event_name)
    return rows, names


class StepTimelineChart:
    """Step durations (seconds) over time (seconds since the first step): ``source`` holds x,
    y, step and metric (the event's name, e.g. "Step:ModeKeys.TRAIN")."""

    def __init__(self, metrics_reader=None, width=1000):
        self.metrics_reader = metrics_reader
        self.last_timestamp = metrics_reader.get_timestamp_of_latest_available_file() + 1
        self.steps, self.metric_names = _step_rows(
            metrics_reader.get_events(0, self.last_timestamp))
        self.width = width
        self._sort()
        self.start = float(self.steps_np[0, 0]) if len(self.steps) else 0.0
        self.create_plot()

    def _sort(self):
        order = sorted(range(len(self.steps)), key=lambda i: self.steps[i][0])
        self.steps = [self.steps[i] for i in order]
        self.metric_names = [self.metric_names[i] for i in order]
        self.steps_np = np.array(self.steps, dtype=float).reshape(-1, 3)

    def _data(self):
        return dict(x=self.steps_np[:, 0] - self.start, y=self.steps_np[:, 1],
                    step=self.steps_np[:, 2].astype(int), metric=list(self.metric_names))

    def _x_range(self):
        if len(self.steps_np) == 0:
            return 0.0, 1.0
        first = max(len(self.steps_np) - self.width, 0)
        lo = self.steps_np[first, 0] - self.start
        hi = self.steps_np[-1, 0] - self.start
        return lo, hi if hi > lo else lo + 1.0

    def create_plot(self):
        bokeh = _bokeh()
        self.plot = bokeh.plotting.figure(height=250, width=1000, x_range=self._x_range(),
                                          tools="crosshair,pan,reset,save,wheel_zoom")
        self.source = bokeh.models.ColumnDataSource(data=self._data())
        self.plot.line(x="x", y="y", source=self.source, line_color="blue")
        self.plot.add_tools(bokeh.models.HoverTool(tooltips=[
            ("index", "$index"), ("step", "@step"), ("metric", "@metric"),
            ("(x,y)", "($x, $y)")]))
        self.plot.xaxis.axis_label = "Time in s"
        self.plot.yaxis.axis_label = "Step duration in s"
        self.plot.xgrid.visible = False
        self.plot.ygrid.visible = False
        self.figure = self.plot
        self.target = _show(self.plot)

    def update_data(self, current_timestamp):
        """Adds the steps that start in [last update, current_timestamp)."""
        events = [e for e in self.metrics_reader.get_events(self.last_timestamp,
                                                            current_timestamp)
                  if e.start_time >= self.last_timestamp]
        self.last_timestamp = current_timestamp
        rows, names = _step_rows(events)
        if not rows:
            return
        self.steps.extend(rows)
        self.metric_names.extend(names)
        self._sort()
        if not self.start:
            self.start = float(self.steps_np[0, 0])
        self.plot.x_range.start, self.plot.x_range.end = self._x_range()
        self.source.data = self._data()
        _push(self.target)


def _system_series(events, key):
    """{key(event): {metric name: [(timestamp_us, value)]}} in time order."""
    out = {}
    for e in sorted(events, key=lambda e: e.timestamp_us):
        out.setdefault(key(e), {}).setdefault(e.name, []).append((e.timestamp_us, e.value))
    return out


def _add_totals(series):
    """Adds "total" to each dimension: the mean over its metrics, sample by sample (as many
    samples as the shortest metric has)."""
    for metrics in series.values():
        if "total" in metrics or not metrics:
            continue
        n = min(len(v) for v in metrics.values())
        ts = [t for t, _ in next(iter(metrics.values()))[:n]]
        vals = np.mean([[v for _, v in vs[:n]] for vs in metrics.values()], axis=0)
        metrics["total"] = list(zip(ts, vals.tolist()))
    return series


class MetricsHistogram:
    """Histograms (bins of 2 from 0 to 100) of the system metrics: one figure per dimension
    ("CPUUtilization-nodeid:<node>", ...) and metric ("cpu0", ..., "total", their mean);
    ``sources[dimension][metric]`` holds top, left, right."""

    def __init__(self, metrics_reader):
        self.metrics_reader = metrics_reader
        self.system_metrics = {}
        self.select_dimensions = []
        self.select_events = []
        self.sources = {}
        self.target = None
        self.figure = None
        self.available_dimensions = []
        self.available_events = []
        self.show_workers = True

    def plot(self, starttime=0, endtime=None, select_dimensions=(".*",), select_events=(".*",),
             show_workers=True):
        """Draws the histograms of the samples in [starttime, endtime) (epoch microseconds)."""
        if endtime is None:
            endtime = self.metrics_reader.get_timestamp_of_latest_available_file() + 1
        self.last_timestamp = endtime
        self.select_dimensions = list(select_dimensions)
        self.select_events = list(select_events)
        self.show_workers = show_workers
        events = self.metrics_reader.get_events(starttime, endtime)
        self.system_metrics = self.preprocess_system_metrics(events, {})
        self.create_plot()
        return self.figure

    def clear(self):
        self.system_metrics = {}
        self.sources = {}

    def _key(self, e):
        return f"{e.dimension}-nodeid:{e.node_id}" if self.show_workers else e.dimension

    def preprocess_system_metrics(self, all_events=(), system_metrics=None):
        """{dimension: {metric: [values]}} with "total", merged into system_metrics; sets
        filtered_dimensions and filtered_events from the selections."""
        system_metrics = {} if system_metrics is None else system_metrics
        for dim, metrics in _system_series(all_events, self._key).items():
            for name, points in metrics.items():
                system_metrics.setdefault(dim, {}).setdefault(name, []).extend(
                    v for _, v in points)
        for metrics in system_metrics.values():
            metrics.pop("total", None)
            n = min(len(v) for v in metrics.values())
            metrics["total"] = np.mean([v[:n] for v in metrics.values()], axis=0).tolist()
        self.available_dimensions = list(system_metrics)
        self.available_events = list(dict.fromkeys(
            m for metrics in system_metrics.values() for m in metrics))
        self.filtered_events = set(_select(self.select_events, self.available_events, True))
        self.filtered_dimensions = set(_select(self.select_dimensions, self.available_dimensions))
        return system_metrics

    @staticmethod
    def _bins(values):
        return np.histogram(np.asarray(values, dtype=float), bins=np.arange(0, 102, 2))

    def create_plot(self):
        bokeh = _bokeh()
        figures = []
        self.sources = {}
        for dim in sorted(self.filtered_dimensions):
            self.sources[dim] = {}
            for event in sorted(self.filtered_events):
                if event not in self.system_metrics[dim]:
                    continue
                counts, edges = self._bins(self.system_metrics[dim][event])
                source = bokeh.models.ColumnDataSource(
                    data=dict(top=counts, left=edges[:-1], right=edges[1:]))
                self.sources[dim][event] = source
                p = bokeh.plotting.figure(height=250, width=250, title=f"{dim} {event}")
                p.quad(top="top", bottom=0, left="left", right="right", source=source,
                       fill_color="navy", line_color="white", fill_alpha=0.5)
                p.y_range.start = 0
                p.xaxis.axis_label = dim + " " + event
                p.yaxis.axis_label = "Occurrences"
                figures.append(p)
        self.figure = bokeh.layouts.gridplot(figures, ncols=4) if figures else None
        if self.figure is not None:
            self.target = _show(self.figure)

    def update_data(self, current_timestamp):
        events = self.metrics_reader.get_events(self.last_timestamp, current_timestamp)
        self.last_timestamp = current_timestamp
        self.system_metrics = self.preprocess_system_metrics(events, self.system_metrics)
        for dim, sources in self.sources.items():
            for event, source in sources.items():
                counts, edges = self._bins(self.system_metrics[dim][event])
                source.data = dict(top=counts, left=edges[:-1], right=edges[1:])
        _push(self.target)


def _percent(dimension, values):
    """Utilisation dimensions are percentages already; others are scaled to their maximum."""
    values = np.asarray(values, dtype=float)
    if re.search(r"(Utilization|Percent|Percentage)(Total)?$", dimension):
        return values
    top = values.max() if values.size else 0.0
    return values / top * 100 if top else values


class Heatmap:
    """System utilisation as a heatmap: one row per node, dimension and metric
    ("CPUUtilization_cpu0_<node>"), one column per sample, colours 0..100 %. ``source`` holds
    image (1 x width arrays), y and metric; ``system_metrics[node][dimension][metric]`` the
    values."""

    def __init__(self, metrics_reader, select_metrics=(), starttime=0, endtime=None,
                 select_dimensions=(".*CPU", ".*GPU"), select_events=(".*",), plot_height=350,
                 show_workers=True):
        self.select_dimensions = list(select_dimensions)
        self.select_events = list(select_events)
        self.show_workers = show_workers
        self.metrics_reader = metrics_reader
        self.plot_height = plot_height
        self.start = 0
        if endtime is None:
            endtime = metrics_reader.get_timestamp_of_latest_available_file() + 1
        self.last_timestamp_system_metrics = endtime
        self.last_timestamp = endtime
        events = metrics_reader.get_events(starttime, endtime)
        self.system_metrics = self.preprocess_system_metrics(events, {})
        self.create_plot()

    def preprocess_system_metrics(self, events, system_metrics):
        for e in events:
            (system_metrics.setdefault(e.node_id, {}).setdefault(e.dimension, {})
             .setdefault(e.name, []).append(e.value))
        self.available_dimensions, self.available_events = [], []
        self.width = 0
        widths = []
        for dims in system_metrics.values():
            for dim, metrics in dims.items():
                if dim not in self.available_dimensions:
                    self.available_dimensions.append(dim)
                for name, values in metrics.items():
                    if name not in self.available_events:
                        self.available_events.append(name)
                    metrics[name] = list(values)
                    widths.append(len(values))
        self.width = min(widths) if widths else 0
        self.filtered_events = set(_select(self.select_events, self.available_events, True))
        self.filtered_dimensions = set(_select(self.select_dimensions, self.available_dimensions))
        return system_metrics

    def _rows(self):
        rows, names = [], []
        for node in sorted(self.system_metrics):
            for dim in sorted(self.system_metrics[node]):
                if dim not in self.filtered_dimensions:
                    continue
                for event in sorted(self.system_metrics[node][dim]):
                    if event in self.filtered_events:
                        values = self.system_metrics[node][dim][event][:self.width]
                        rows.append(_percent(dim, values))
                        names.append(f"{dim}_{event}_{node}")
        return rows, names

    def create_plot(self):
        bokeh = _bokeh()
        rows, names = self._rows()
        n = len(rows)
        start = max(self.width - 1000, 0)
        self.plot = bokeh.plotting.figure(
            height=self.plot_height, width=1000, x_range=(start, max(self.width, 1)),
            y_range=(0, max(n, 1)), tools="crosshair,reset,xwheel_zoom")
        self.plot.xaxis.axis_label = "Sample index"
        mapper = bokeh.models.LinearColorMapper(palette=bokeh.palettes.viridis(100), low=0,
                                                high=100)
        self.source = bokeh.models.ColumnDataSource(data=dict(
            image=[r.reshape(1, -1) for r in rows], x=[0] * n, y=list(range(n)),
            dw=[self.width] * n, dh=[1] * n, metric=names))
        self.plot.image(image="image", x="x", y="y", dw="dw", dh="dh", color_mapper=mapper,
                        source=self.source)
        self.plot.add_tools(bokeh.models.HoverTool(
            tooltips=[("usage", "@image"), ("metric", "@metric"), ("index", "$x{0}")]))
        self.plot.xgrid.visible = False
        self.plot.ygrid.visible = False
        self.plot.yaxis.ticker = bokeh.models.FixedTicker(ticks=[i + 0.5 for i in range(n)])
        self.plot.yaxis.major_label_overrides = {i + 0.5: name for i, name in enumerate(names)}
        self.plot.yaxis.major_label_text_font_size = "7pt"
        self.figure = self.plot
        self.target = _show(self.plot)


class TimelineCharts:
    """System metrics over time (seconds since the first sample), one line chart per
    dimension and metric (``sources[dimension][metric]`` holds x, y); and, for a range of
    sample indices, the framework events of that time (plot_detailed_profiler_data:
    ``framework_source`` holds one bar per event, phase, name, start and end in s)."""

    def __init__(self, system_metrics_reader, framework_metrics_reader, starttime=0,
                 endtime=None, select_dimensions=(".*",), select_events=(".*",), x=1000,
                 show_workers=True):
        self.select_dimensions = list(select_dimensions)
        self.select_events = list(select_events)
        self.show_workers = show_workers
        self.sources = {}
        self.system_metrics_reader = system_metrics_reader
        self.framework_metrics_reader = framework_metrics_reader
        if endtime is None:
            endtime = system_metrics_reader.get_timestamp_of_latest_available_file() + 1
        self.last_timestamp_system_metrics = endtime
        events = system_metrics_reader.get_events(starttime, endtime)
        self.start = min((e.timestamp_us for e in events), default=0)
        self.system_metrics = self.preprocess_system_metrics(events, {})
        lengths = [len(v) for dim, m in self.system_metrics.items()
                   if dim.startswith("CPUUtilization") for v in m.values()]
        self.width = min([x] + lengths)
        self.framework_source = None
        self.create_plot()

    def _key(self, e):
        return f"{e.dimension}-nodeid:{e.node_id}" if self.show_workers else e.dimension

    def preprocess_system_metrics(self, events, system_metrics):
        """{dimension: {metric: array of (seconds since start, value)}} with "total"."""
        for dim, metrics in _system_series(events, self._key).items():
            for name, points in metrics.items():
                system_metrics.setdefault(dim, {}).setdefault(name, []).extend(points)
        for metrics in system_metrics.values():
            metrics.pop("total", None)
            for name in metrics:
                metrics[name] = [tuple(p) for p in metrics[name]]
        _add_totals(system_metrics)
        self.available_dimensions = list(system_metrics)
        self.available_events = list(dict.fromkeys(
            m for metrics in system_metrics.values() for m in metrics))
        self.filtered_events = set(_select(self.select_events, self.available_events, True))
        self.filtered_dimensions = set(_select(self.select_dimensions, self.available_dimensions))
        return system_metrics

    def _xy(self, points):
        arr = np.array(points, dtype=float).reshape(-1, 2)
        return (arr[:, 0] - self.start) / MICROS, arr[:, 1]

    def plot_system_metrics(self):
        bokeh = _bokeh()
        figures = []
        x_range = None
        for dim in sorted(self.filtered_dimensions):
            self.sources[dim] = {}
            for event in sorted(self.filtered_events):
                if event not in self.system_metrics[dim]:
                    continue
                kwargs = {"x_range": x_range} if x_range is not None else {}
                p = bokeh.plotting.figure(height=150, width=1000, title=f"{dim} {event}",
                                          tools="crosshair,xbox_select,pan,reset,save,"
                                                "xwheel_zoom", **kwargs)
                x_range = p.x_range
                xs, ys = self._xy(self.system_metrics[dim][event])
                source = bokeh.models.ColumnDataSource(data=dict(x=xs, y=ys))
                p.line("x", "y", source=source)
                p.scatter("x", "y", source=source, size=2)
                p.xaxis.axis_label = "Time in s"
                p.yaxis.axis_label = dim
                self.sources[dim][event] = source
                figures.append(p)
        return figures

    def create_plot(self):
        bokeh = _bokeh()
        self.figures = self.plot_system_metrics()
        self.figure = bokeh.layouts.column(*self.figures) if self.figures else None
        if self.figure is not None:
            self.target = _show(self.figure)

    def _time_of_indexes(self, indexes):
        """(start_us, end_us) epoch of sample indices [i0, i1] of the first CPU total."""
        for dim in sorted(self.system_metrics):
            if dim.startswith("CPUUtilization") and "total" in self.system_metrics[dim]:
                points = self.system_metrics[dim]["total"]
                break
        else:
            points = next(iter(next(iter(self.system_metrics.values())).values()))
        i0 = max(0, min(int(indexes[0]), len(points) - 1))
        i1 = max(i0, min(int(indexes[-1]), len(points) - 1))
        return int(points[i0][0]), int(points[i1][0]) + 1

    def plot_detailed_profiler_data(self, indexes):
        """Draws the framework events of the time of system-metric samples indexes[0] to
        indexes[-1]: one horizontal bar per event, a row per phase."""
        bokeh = _bokeh()
        start_us, end_us = self._time_of_indexes(indexes)
        events = self.framework_metrics_reader.get_events(start_us, end_us)
        phases = sorted({e.event_phase for e in events})
        row = {p: i for i, p in enumerate(phases)}
        data = dict(left=[(e.start_time - self.start) / MICROS for e in events],
                    right=[(e.end_time - self.start) / MICROS for e in events],
                    bottom=[row[e.event_phase] + 0.1 for e in events],
                    top=[row[e.event_phase] + 0.9 for e in events],
                    phase=[e.event_phase for e in events],
                    name=[e.event_name for e in events],
                    step=[-1 if e.step is None else int(e.step) for e in events])
        self.framework_source = bokeh.models.ColumnDataSource(data=data)
        p = bokeh.plotting.figure(height=max(150, 40 * len(phases)), width=1000,
                                  tools="crosshair,pan,reset,save,xwheel_zoom",
                                  y_range=(0, max(len(phases), 1)))
        p.quad(left="left", right="right", bottom="bottom", top="top",
               source=self.framework_source, fill_alpha=0.6)
        p.add_tools(bokeh.models.HoverTool(tooltips=[("phase", "@phase"), ("name", "@name"),
                                                     ("step", "@step")]))
        p.yaxis.ticker = bokeh.models.FixedTicker(ticks=[i + 0.5 for i in range(len(phases))])
        p.yaxis.major_label_overrides = {i + 0.5: ph for i, ph in enumerate(phases)}
        p.xaxis.axis_label = "Time in s"
        self.framework_figure = p
        self.target = _show(p)
        return p

    def update_data(self, current_timestamp):
        """Adds the system metrics of [last update, current_timestamp)."""
        events = self.system_metrics_reader.get_events(self.last_timestamp_system_metrics,
                                                       current_timestamp)
        self.last_timestamp_system_metrics = current_timestamp
        self.system_metrics = self.preprocess_system_metrics(events, self.system_metrics)
        for dim, sources in self.sources.items():
            for event, source in sources.items():
                xs, ys = self._xy(self.system_metrics[dim][event])
                source.data = dict(x=xs, y=ys)
        _push(getattr(self, "target", None))
