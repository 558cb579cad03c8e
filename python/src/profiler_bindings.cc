// The profiler in trainscope._core: TimelineWriter (framework spans), SystemSampler (system
// metrics from the training process itself), the profiler configuration parser, the readers of
// system/ and framework/ (SystemMetricsReader, TimelineReader), MergeTimeline and the strict trace
// validator. See include/trainscope/{timeline,system_sampler,profiler_config,metrics_reader,
// trace_merge}.h; python/trainscope/profiler/ builds the Python API on these.
//
// TimelineWriter.record is the hook's hot path: it keeps the GIL (Record only appends under a
// mutex) and builds the args vector directly, without a dict, when only step_num is given.
// Everything that may do I/O or wait (flush, close, sampler start/stop, readers, merge) releases
// the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "status_py.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/profiler_config.h"
#include "trainscope/profiler_format.h"
#include "trainscope/step_timeline.h"
#include "trainscope/system_sampler.h"
#include "trainscope/timeline.h"
#include "trainscope/trace_merge.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

// args dict -> TimelineArgs (bool, int, float, str; anything else becomes its str()).
void AppendArgs(const py::handle& args, TimelineArgs* out) {
  if (args.is_none()) return;
  py::dict d = py::reinterpret_borrow<py::dict>(args);
  for (auto item : d) {
    std::string key = py::str(item.first).cast<std::string>();
    py::handle v = item.second;
    if (PyBool_Check(v.ptr())) {
      out->emplace_back(std::move(key), v.cast<bool>());
    } else if (PyLong_Check(v.ptr())) {
      out->emplace_back(std::move(key), v.cast<int64_t>());
    } else if (PyFloat_Check(v.ptr())) {
      out->emplace_back(std::move(key), v.cast<double>());
    } else {
      out->emplace_back(std::move(key), py::str(v).cast<std::string>());
    }
  }
}

class PyTimelineWriter {
 public:
  explicit PyTimelineWriter(std::unique_ptr<TimelineWriter> w)
      : w_(std::move(w)), pid_(static_cast<int64_t>(getpid())) {}
  ~PyTimelineWriter() { ResetWithoutGil(w_); }
  TimelineWriter& w() { return *w_; }
  int64_t pid() const { return pid_; }

  // smdebug's args: step_num as a string, pid the OS process.
  void Record(std::string_view phase, std::string_view name, int64_t start_us, int64_t dur_us,
              int64_t step, const py::handle& args) {
    TimelineArgs a;
    a.reserve(2);
    if (step >= 0) a.emplace_back(std::string(profiler_format::kStepArg), std::to_string(step));
    a.emplace_back("pid", pid_);
    AppendArgs(args, &a);
    w_->Record(phase, name, static_cast<uint64_t>(start_us),
               static_cast<uint64_t>(dur_us < 0 ? 0 : dur_us), std::move(a));
  }

  void RecordInstant(std::string_view phase, std::string_view name, int64_t ts_us, int64_t step,
                     const py::handle& args, const std::string& scope) {
    TimelineArgs a;
    if (step >= 0) a.emplace_back(std::string(profiler_format::kStepArg), std::to_string(step));
    a.emplace_back("pid", pid_);
    AppendArgs(args, &a);
    char s = scope.empty() ? 't' : scope[0];
    if (s != 'g' && s != 'p' && s != 't') throw py::value_error("scope must be 'g', 'p' or 't'");
    w_->RecordInstant(phase, name, static_cast<uint64_t>(ts_us), std::move(a), s);
  }

 private:
  std::unique_ptr<TimelineWriter> w_;
  int64_t pid_;
};

// (phase, name, start_us, dur_us, step) of a step span, as the Python recorder keeps spans.
py::tuple SpanTuple(const StepTimeline::Span& s) {
  py::str phase(std::string(StepTimeline::PhaseName(s.mode)));
  return py::make_tuple(phase, phase, s.start_us, s.dur_us, s.step);
}

py::dict RangeToDict(const ProfileRange& r) {
  py::dict d;
  d["specified"] = r.specified;
  d["enabled"] = r.enabled();
  d["error"] = r.error;
  d["start_step"] = r.start_step ? py::cast(*r.start_step) : py::none();
  d["num_steps"] = r.num_steps ? py::cast(*r.num_steps) : py::none();
  d["start_time_s"] = r.start_time_s ? py::cast(*r.start_time_s) : py::none();
  d["duration_s"] = r.duration_s ? py::cast(*r.duration_s) : py::none();
  d["metrics_regex"] = r.metrics_regex;
  d["profiler_name"] = r.profiler_name;
  d["cprofile_timer"] = r.cprofile_timer;
  return d;
}

py::dict ConfigToDict(const ProfilerConfig& c) {
  py::dict d;
  d["enabled"] = c.enabled;
  d["source_path"] = c.source_path;
  d["local_path"] = c.local_path;
  d["rotate_max_file_size_bytes"] = c.rotate_max_file_size_bytes;
  d["rotate_file_close_interval_seconds"] = c.rotate_file_close_interval_seconds;
  d["file_open_fail_threshold"] = c.file_open_fail_threshold;
  d["phase_min_interval_millis"] = c.phase_min_interval_millis;
  d["system_monitor_interval_millis"] =
      c.system_monitor_interval_millis ? py::cast(*c.system_monitor_interval_millis) : py::none();
  d["detailed_profiling"] = RangeToDict(c.detailed_profiling);
  d["dataloader_profiling"] = RangeToDict(c.dataloader_profiling);
  d["python_profiling"] = RangeToDict(c.python_profiling);
  d["smdataparallel_profiling"] = RangeToDict(c.smdataparallel_profiling);
  d["warnings"] = c.warnings;
  return d;
}

py::tuple SystemEventTuple(const SystemMetricEvent& e) {
  return py::make_tuple(e.timestamp_us, e.type, e.name, e.dimension, e.value, e.node_id);
}

py::dict TimelineEventDict(const TimelineEvent& e) {
  py::dict d;
  d["name"] = e.name;
  d["phase"] = e.phase;
  d["ph"] = std::string(1, e.ph);
  d["start_us"] = e.start_us;
  d["dur_us"] = e.dur_us;
  d["end_us"] = e.end_us();
  d["pid"] = e.pid;
  d["tid"] = e.tid;
  d["node_id"] = e.node_id;
  d["file_suffix"] = e.file_suffix;
  d["args_json"] = e.args_json;
  d["step"] = e.step ? py::cast(*e.step) : py::none();
  return d;
}

py::dict StatsDict(const ReaderStats& s) {
  py::dict d;
  d["files_parsed"] = s.files_parsed;
  d["lines_skipped"] = s.lines_skipped;
  d["files_failed"] = s.files_failed;
  d["problems"] = s.problems;
  return d;
}

TimelineQuery MakeTimelineQuery(std::vector<std::string> suffixes, std::string node_id,
                                std::string phase_prefix) {
  TimelineQuery q;
  q.suffixes = std::move(suffixes);
  q.node_id = std::move(node_id);
  q.phase_prefix = std::move(phase_prefix);
  return q;
}

py::list TimelineEventList(const std::vector<TimelineEvent>& events) {
  py::list out;
  for (const auto& e : events) out.append(TimelineEventDict(e));
  return out;
}

}  // namespace

void RegisterProfiler(py::module_& m) {
  py::class_<PyTimelineWriter>(m, "TimelineWriter", R"doc(
Framework timeline writer (trainscope/timeline.h): Chrome trace events in smdebug's
framework/pevents layout under base_dir, rotated by size, age and UTC hour.

record(phase, name, start_us, dur_us, step=-1, args=None): one complete event; times are epoch
microseconds; step >= 0 adds args.step_num (as smdebug, a string); args.pid is always added.
Thread-safe; record() only appends to a buffer that a background thread writes.)doc")
      .def(py::init([](const std::string& base_dir, const std::string& node_id,
                       const std::string& suffix, uint64_t max_file_size_bytes,
                       double close_interval_seconds, int64_t file_open_fail_threshold,
                       uint64_t start_time_us, int64_t flush_interval_millis) {
             TimelineWriterOptions o;
             o.node_id = node_id;
             o.suffix = suffix;
             o.max_file_size_bytes = max_file_size_bytes;
             o.close_interval_seconds = close_interval_seconds;
             o.file_open_fail_threshold = file_open_fail_threshold;
             o.start_time_us = start_time_us;
             o.flush_interval_millis = flush_interval_millis;
             return std::make_unique<PyTimelineWriter>(CallWithoutGil(
                 [&] { return TimelineWriter::Create(Env::Default(), base_dir, std::move(o)); }));
           }),
           py::arg("base_dir"), py::arg("node_id") = "",
           py::arg("suffix") = std::string(profiler_format::kPythonTimelineSuffix),
           py::arg("max_file_size_bytes") = profiler_format::kDefaultRotateMaxFileSizeBytes,
           py::arg("close_interval_seconds") =
               static_cast<double>(profiler_format::kDefaultRotateFileCloseIntervalSeconds),
           py::arg("file_open_fail_threshold") = profiler_format::kDefaultFileOpenFailThreshold,
           py::arg("start_time_us") = 0, py::arg("flush_interval_millis") = 1000)
      .def("record", &PyTimelineWriter::Record, py::arg("phase"), py::arg("name"),
           py::arg("start_us"), py::arg("dur_us"), py::arg("step") = -1,
           py::arg("args") = py::none())
      .def("record_instant", &PyTimelineWriter::RecordInstant, py::arg("phase"), py::arg("name"),
           py::arg("ts_us"), py::arg("step") = -1, py::arg("args") = py::none(),
           py::arg("scope") = "t")
      .def("flush",
           [](PyTimelineWriter& self) { CallWithoutGil([&] { return self.w().Flush(); }); })
      .def("close",
           [](PyTimelineWriter& self) { CallWithoutGil([&] { return self.w().Close(); }); })
      .def("now_us", [](PyTimelineWriter& self) { return self.w().NowMicros(); })
      .def_property_readonly("node_id", [](PyTimelineWriter& self) { return self.w().node_id(); })
      .def_property_readonly("start_time_us",
                             [](PyTimelineWriter& self) { return self.w().start_time_us(); })
      .def_property_readonly("events_recorded",
                             [](PyTimelineWriter& self) { return self.w().events_recorded(); })
      .def_property_readonly("events_written",
                             [](PyTimelineWriter& self) { return self.w().events_written(); })
      .def_property_readonly("events_dropped",
                             [](PyTimelineWriter& self) { return self.w().events_dropped(); })
      .def("finished_files", [](PyTimelineWriter& self) { return self.w().finished_files(); });

  py::class_<StepTimeline>(m, "StepTimeline", R"doc(
A framework timeline's Step spans (trainscope/step_timeline.h): begin(t_us, mode, mode_step,
global_step) ends the step in progress (records it into `writer`) and begins the next; returns
whether the new step records its Forward/Backward/Optimizer spans (PhaseMinIntervalInMilliseconds
as phase_period_us). A hook given it (Hook.attach_step_timeline) calls begin() at each step
boundary itself. kept(): the newest `keep` spans as (phase, name, start_us, dur_us, step).)doc")
      .def(py::init([](PyTimelineWriter& writer, uint64_t phase_period_us, size_t keep) {
             return std::make_unique<StepTimeline>(&writer.w(), writer.pid(), phase_period_us,
                                                   keep);
           }),
           py::arg("writer"), py::arg("phase_period_us") = 0, py::arg("keep") = 0,
           py::keep_alive<1, 2>())
      .def(
          "begin",
          [](StepTimeline& t, uint64_t t_us, py::handle mode, int64_t mode_step,
             int64_t global_step, bool ended_saved, int64_t ended_model_calls) {
            return t.Begin(t_us, ModeFromPython(mode), mode_step, global_step, ended_saved,
                           ended_model_calls);
          },
          py::arg("t_us"), py::arg("mode"), py::arg("mode_step"), py::arg("global_step"),
          py::arg("ended_saved") = false, py::arg("ended_model_calls") = 0)
      .def("end", &StepTimeline::End, py::arg("t_us"), py::arg("ended_saved") = false,
           py::arg("ended_model_calls") = 0)
      .def("flush", &StepTimeline::Flush)
      .def_property_readonly("mode_step", &StepTimeline::mode_step)
      .def("kept",
           [](const StepTimeline& t) {
             py::list out;
             for (const StepTimeline::Span& s : t.kept()) out.append(SpanTuple(s));
             return out;
           })
      .def("last", [](const StepTimeline& t) -> py::object {
        StepTimeline::Span s{};
        if (!t.last_kept(&s)) return py::none();
        return SpanTuple(s);
      });

  py::class_<SystemSampler>(m, "SystemSampler", R"doc(
System metrics sampler (trainscope/system_sampler.h) writing smdebug's system/incremental layout
under base_dir. start() runs it in a background thread; stop() joins it.)doc")
      .def(py::init([](const std::string& base_dir, int64_t interval_millis, int node_index,
                       int root_pid, bool disable_gpu) {
             SystemSamplerOptions o;
             o.interval_millis = interval_millis;
             o.node_index = node_index;
             o.root_pid = root_pid;
             o.disable_gpu = disable_gpu;
             return CallWithoutGil(
                 [&] { return SystemSampler::Create(Env::Default(), base_dir, std::move(o)); });
           }),
           py::arg("base_dir"),
           py::arg("interval_millis") = profiler_format::kDefaultSystemIntervalMillis,
           py::arg("node_index") = 1, py::arg("root_pid") = 0, py::arg("disable_gpu") = false)
      .def("start", [](SystemSampler& self) { CallWithoutGil([&] { return self.Start(); }); })
      .def("stop", &SystemSampler::Stop, py::call_guard<py::gil_scoped_release>())
      .def("sample_now",
           [](SystemSampler& self) {
             py::gil_scoped_release release;
             self.SampleNow();
           })
      .def_property_readonly("running", &SystemSampler::running)
      .def_property_readonly("samples_taken", &SystemSampler::samples_taken)
      .def_property_readonly("records_written", &SystemSampler::records_written)
      .def("reports", &SystemSampler::reports)
      .def("gpu_status", &SystemSampler::gpu_status);

  m.def(
      "parse_profiler_config",
      [](const std::string& text, const std::string& source) {
        return ConfigToDict(ValueOrThrow(ParseProfilerConfig(text, source)));
      },
      py::arg("text"), py::arg("source") = "profiler config",
      "smdebug's profiler JSON (ProfilingParameters) -> dict; ValueError when it is not valid.");
  m.def(
      "load_profiler_config",
      []() {
        Result<ProfilerConfig> r = [] {
          py::gil_scoped_release release;
          return LoadProfilerConfig(Env::Default());
        }();
        return ConfigToDict(ValueOrThrow(std::move(r)));
      },
      "The profiler config named by TRAINSCOPE_PROFILER_CONFIG, else SMPROFILER_CONFIG_PATH.");

  py::class_<SystemMetricsReader>(m, "SystemMetricsReader", R"doc(
Reads <trial>/system/ (trainscope/metrics_reader.h). get_events returns tuples
(timestamp_us, type, name, dimension, value, node_id) with start_us <= timestamp < end_us.)doc")
      .def(py::init([](const std::string& trial_dir) {
             return std::make_unique<SystemMetricsReader>(Env::Default(), trial_dir);
           }),
           py::arg("trial_dir"))
      .def("refresh",
           [](SystemMetricsReader& self) { CallWithoutGil([&] { return self.Refresh(); }); })
      .def(
          "get_events",
          [](SystemMetricsReader& self, int64_t start_us, int64_t end_us, std::string type,
             std::string dimension, std::string node_id) {
            SystemMetricsQuery q{std::move(type), std::move(dimension), std::move(node_id)};
            std::vector<SystemMetricEvent> events =
                CallWithoutGil([&] { return self.GetEvents(start_us, end_us, q); });
            py::list out;
            for (const auto& e : events) out.append(SystemEventTuple(e));
            return out;
          },
          py::arg("start_us") = kTimeMin, py::arg("end_us") = kTimeMax, py::arg("type") = "",
          py::arg("dimension") = "", py::arg("node_id") = "")
      .def("first_timestamp_us", &SystemMetricsReader::FirstTimestampMicros)
      .def("latest_timestamp_us", &SystemMetricsReader::LatestTimestampMicros)
      .def("stats", [](SystemMetricsReader& self) { return StatsDict(self.stats()); });

  py::class_<TimelineReader>(m, "TimelineReader", R"doc(
Reads <trial>/framework/pevents/ (trainscope/metrics_reader.h). Events are dicts with name,
phase, ph, start_us, dur_us, end_us, pid, tid, node_id, file_suffix, args_json, step.)doc")
      .def(py::init([](const std::string& trial_dir) {
             return std::make_unique<TimelineReader>(Env::Default(), trial_dir);
           }),
           py::arg("trial_dir"))
      .def("refresh", [](TimelineReader& self) { CallWithoutGil([&] { return self.Refresh(); }); })
      .def(
          "get_events",
          [](TimelineReader& self, int64_t start_us, int64_t end_us,
             std::vector<std::string> suffixes, std::string node_id, std::string phase_prefix) {
            TimelineQuery q =
                MakeTimelineQuery(std::move(suffixes), std::move(node_id), std::move(phase_prefix));
            return TimelineEventList(
                CallWithoutGil([&] { return self.GetEvents(start_us, end_us, q); }));
          },
          py::arg("start_us") = kTimeMin, py::arg("end_us") = kTimeMax,
          py::arg("suffixes") = std::vector<std::string>{}, py::arg("node_id") = "",
          py::arg("phase_prefix") = "")
      .def(
          "get_events_by_step",
          [](TimelineReader& self, int64_t start_step, int64_t end_step,
             std::vector<std::string> suffixes, std::string node_id, std::string phase_prefix) {
            TimelineQuery q =
                MakeTimelineQuery(std::move(suffixes), std::move(node_id), std::move(phase_prefix));
            return TimelineEventList(
                CallWithoutGil([&] { return self.GetEventsByStep(start_step, end_step, q); }));
          },
          py::arg("start_step"), py::arg("end_step"),
          py::arg("suffixes") = std::vector<std::string>{}, py::arg("node_id") = "",
          py::arg("phase_prefix") = "")
      .def(
          "get_step_time_range",
          [](TimelineReader& self, int64_t start_step, int64_t end_step) {
            StepTimeRange range =
                CallWithoutGil([&] { return self.GetStepTimeRange(start_step, end_step); });
            return py::make_tuple(range.start_us, range.end_us);
          },
          py::arg("start_step"), py::arg("end_step"))
      .def("first_timestamp_us", &TimelineReader::FirstTimestampMicros)
      .def("latest_timestamp_us", &TimelineReader::LatestTimestampMicros)
      .def("stats", [](TimelineReader& self) { return StatsDict(self.stats()); });

  m.def(
      "merge_timeline",
      [](const std::string& trial_dir, const std::string& out_path, int64_t start_us,
         int64_t end_us, bool include_system, bool include_framework, bool include_detailed,
         bool include_rules) {
        MergeTimelineOptions o;
        o.start_us = start_us;
        o.end_us = end_us;
        o.include_system = include_system;
        o.include_framework = include_framework;
        o.include_detailed = include_detailed;
        o.include_rules = include_rules;
        MergeTimelineResult res =
            CallWithoutGil([&] { return MergeTimeline(Env::Default(), trial_dir, out_path, o); });
        py::dict d;
        d["base_time_us"] = res.base_time_us;
        d["counter_events"] = res.counter_events;
        d["framework_events"] = res.framework_events;
        d["detailed_events"] = res.detailed_events;
        d["rule_events"] = res.rule_events;
        d["metadata_events"] = res.metadata_events;
        d["warnings"] = res.warnings;
        return d;
      },
      py::arg("trial_dir"), py::arg("out_path"), py::arg("start_us") = kTimeMin,
      py::arg("end_us") = kTimeMax, py::arg("include_system") = true,
      py::arg("include_framework") = true, py::arg("include_detailed") = true,
      py::arg("include_rules") = true,
      "Merges a trial's profiler data and rule findings into one Chrome trace (trace_merge.h).");
  m.def(
      "validate_trace_events",
      [](const std::string& json_text) {
        CallWithoutGil([&] { return ValidateTraceEvents(json_text); });
      },
      py::arg("json_text"), "Strict Chrome trace check; ValueError naming the first bad event.");
  m.def("default_timeline_node_id", &profiler_format::DefaultTimelineNodeId,
        "smdebug's node id of this process: <pid>-<hostname>.");
}

}  // namespace trainscope::python
