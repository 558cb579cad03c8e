// The profiler configuration in smdebug's schema (reference: smdebug profiler_config_parser.py):
//   {"ProfilingParameters": {"ProfilerEnabled": true, "LocalPath": "...",
//     "RotateMaxFileSizeInBytes": 10485760, "RotateFileCloseIntervalInSeconds": 60,
//     "FileOpenFailThreshold": 50, "SystemMonitorIntervalMillis": 500,
//     "DetailedProfilingConfig": "{\"StartStep\": 2, \"NumSteps\": 2}",
//     "DataloaderProfilingConfig": "{...}", "PythonProfilingConfig": "{...}",
//     "SMDataParallelProfilingConfig": "{...}"}}
// Keys match case-insensitively and ignoring '_' (so "system_monitor_interval_millis" works too);
// values keep their case (smdebug lowercases the whole file, paths included; we do not).
// Sub-configs are JSON strings (or, leniently, objects) holding StartStep/NumSteps or
// StartTimeInSecSinceEpoch/DurationInSeconds; a bad sub-config disables only itself, with a
// warning, as in smdebug.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/status.h"

namespace trainscope {

// A window of steps or of time during which a kind of profiling runs.
struct ProfileRange {
  bool specified = false;  // the sub-config was present and non-empty
  std::string error;       // why it is disabled despite being specified ("" if fine)
  std::optional<int64_t> start_step;
  std::optional<int64_t> num_steps;
  std::optional<double> start_time_s;  // StartTimeInSecSinceEpoch
  std::optional<double> duration_s;    // DurationInSeconds
  // DataloaderProfilingConfig only: MetricsRegex (default ".*").
  std::string metrics_regex;
  // PythonProfilingConfig only: ProfilerName ("cprofile" default, or "pyinstrument") and
  // cProfileTimer ("total_time" default, "cpu_time", "off_cpu_time").
  std::string profiler_name;
  std::string cprofile_timer;

  bool enabled() const { return specified && error.empty(); }
  bool has_step_range() const { return start_step.has_value() || num_steps.has_value(); }
  bool has_time_range() const { return start_time_s.has_value() || duration_s.has_value(); }

  // smdebug's can_start_profiling: whether `step` at epoch time `now_s` is profiled. Stateful as
  // in smdebug: a missing StartStep becomes the first step asked about, a missing NumSteps 1, a
  // missing start time the first time asked about; a time range without duration covers one step.
  bool ShouldProfile(int64_t step, double now_s);

 private:
  std::optional<int64_t> end_step_;
  std::optional<double> end_time_s_;
};

struct ProfilerConfig {
  bool enabled = false;     // ProfilingParameters present, non-empty, not disabled
  std::string source_path;  // the file it came from ("" when parsed from text)
  std::string local_path = "/opt/ml/output/profiler";
  uint64_t rotate_max_file_size_bytes = 10485760;
  double rotate_file_close_interval_seconds = 60;
  int64_t file_open_fail_threshold = 50;
  // PhaseMinIntervalInMilliseconds (trainscope's key; 0 = every step): the Python hook records
  // the Forward, Backward and Optimizer spans of a step only when that step begins at least this
  // long after the last step whose spans it recorded, so a training of sub-millisecond steps
  // pays for them on a sample of its steps; step and data-loader spans are always recorded
  // (docs/formats/framework_profiling.md). `trainscope run` sets 10.
  int64_t phase_min_interval_millis = 0;
  // SystemMonitorIntervalMillis / ProfilingIntervalInMilliseconds, 100..60000, if given.
  std::optional<int64_t> system_monitor_interval_millis;
  ProfileRange detailed_profiling;
  ProfileRange dataloader_profiling;
  ProfileRange python_profiling;
  ProfileRange smdataparallel_profiling;
  // Problems that disabled a part or fell back to a default, for the caller to log once.
  std::vector<std::string> warnings;
};

// Parses the JSON text. InvalidArgument (naming `source` and the problem) when the text is not a
// JSON object or the interval is out of range. A missing or empty ProfilingParameters, or
// "DisableProfiler": true, or "ProfilerEnabled": false, gives enabled == false.
Result<ProfilerConfig> ParseProfilerConfig(std::string_view json_text,
                                           std::string_view source = "profiler config");

// Reads the file named by TRAINSCOPE_PROFILER_CONFIG, else SMPROFILER_CONFIG_PATH. Neither set, or
// the file missing: a config with enabled == false and a warning saying so (the profiler is off,
// as in smdebug). A file that exists but cannot be read or parsed: the error.
Result<ProfilerConfig> LoadProfilerConfig(Env* env);

}  // namespace trainscope
