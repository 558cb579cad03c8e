// Readers of the profiler's data in a trial folder: SystemMetricsReader (system/, JSON lines) and
// TimelineReader (framework/pevents/, Chrome trace JSON), for ours and smdebug's files. Profiler
// rules and trial.system_metrics()/framework_metrics() query them by time range [start_us, end_us)
// (epoch microseconds) or by step.
//
// Tolerance: a file may be incomplete while it is written or after a crash. A timeline file may
// lack its closing "]" or end in a torn line; a system file may end in a torn line. Such lines are
// skipped and counted (stats()), never fatal; a reader never crashes on bad bytes. A file that
// cannot be read at all is reported in stats() and skipped.
//
// Thread safety: a reader is used by one thread at a time (distinct readers are independent).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/status.h"

namespace trainscope {

inline constexpr int64_t kTimeMin = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kTimeMax = std::numeric_limits<int64_t>::max();

// Files and lines a reader skipped, and why (the first few reasons, with path and line).
struct ReaderStats {
  int64_t files_parsed = 0;
  int64_t lines_skipped = 0;          // torn or corrupt lines
  int64_t files_failed = 0;           // unreadable or not parseable at all
  std::vector<std::string> problems;  // at most 20 kept
};

// ---------------------------------------------------------------------------------------------
// System metrics

struct SystemMetricEvent {
  std::string type;       // "cpu", "gpu", ...
  std::string name;       // "cpu0", "gpu1", "MemoryUsedPercent", ...
  std::string dimension;  // "CPUUtilization", ...
  double value = 0;
  std::string node_id;                                                          // "algo-1"
  int64_t timestamp_us = 0;                                                     // epoch
  double timestamp() const { return static_cast<double>(timestamp_us) / 1e6; }  // seconds
};

struct SystemMetricsQuery {
  std::string type;       // empty: any
  std::string dimension;  // empty: any
  std::string node_id;    // empty: any
};

struct SystemMetricsFile {
  int64_t minute_us;  // from the file name
  std::string node_id;
  std::string path;  // absolute (base_dir joined)
};

class SystemMetricsReader {
 public:
  // `env` is not owned. Reads <trial_dir>/system/**/<10 digits>.algo-<n>.json.
  SystemMetricsReader(Env* env, std::string trial_dir);

  // Re-lists the files (new minutes, new nodes). Cheap enough to call before each query.
  Status Refresh();
  const std::vector<SystemMetricsFile>& files() const { return files_; }
  // Minute of the first / newest file in microseconds, 0 when none.
  int64_t FirstTimestampMicros() const;
  int64_t LatestTimestampMicros() const;

  // Events with start_us <= timestamp < end_us matching `q`, sorted by timestamp (stable). Lists
  // files first if none are known. Parsed files are cached; a file that grew is parsed again.
  Result<std::vector<SystemMetricEvent>> GetEvents(int64_t start_us, int64_t end_us,
                                                   const SystemMetricsQuery& q = {});
  const ReaderStats& stats() const { return stats_; }

  // Parses the contents of one file (JSON lines). Bad lines are skipped and counted in *stats.
  static std::vector<SystemMetricEvent> ParseFile(std::string_view contents,
                                                  std::string_view path_for_errors,
                                                  ReaderStats* stats);

 private:
  struct Cached {
    uint64_t size = 0;
    std::vector<SystemMetricEvent> events;
  };
  Env* env_;
  std::string trial_dir_;
  std::vector<SystemMetricsFile> files_;  // sorted by minute
  bool listed_ = false;
  std::map<std::string, Cached> cache_;
  ReaderStats stats_;
};

// ---------------------------------------------------------------------------------------------
// Framework timeline

struct TimelineEvent {
  std::string name;
  std::string phase;  // process_name of the event's pid ("Step:ModeKeys.TRAIN"), "Unknown" if none
  char ph = 'X';      // 'X' (B/E pairs are joined into X) or 'i'
  char scope = 't';   // of an instant: 'g', 'p' or 't'
  int64_t start_us = 0;  // epoch
  int64_t dur_us = 0;
  int64_t end_us() const { return start_us + dur_us; }
  int64_t pid = 0;  // the phase pid in the file
  int64_t tid = 0;
  std::string node_id;
  std::string file_suffix;  // "pythontimeline.json", ...
  // args as key -> value text (strings unquoted, numbers and bools as JSON, objects as JSON).
  std::vector<std::pair<std::string, std::string>> args;
  std::string args_json;        // the args object as JSON text ("" when none), types preserved
  std::optional<int64_t> step;  // args.step_num, as smdebug writes it ("3") or as a number
  const std::string* Arg(std::string_view key) const;
};

struct TimelineQuery {
  std::vector<std::string> suffixes;  // empty: every kind of timeline file
  std::string node_id;                // empty: any
  std::string phase_prefix;           // e.g. "Step:" ; empty: any
};

struct TimelineFile {
  int64_t end_us;
  std::string node_id;
  std::string suffix;
  std::string path;  // absolute
};

struct StepTimeRange {
  int64_t start_us;
  int64_t end_us;  // exclusive: the start of end_step
};

struct TimelineReaderOptions {
  // Files are selected by their end time (the file name): those ending within this much of the
  // query's range, before or after (an event that began inside the range may end in a later file;
  // smdebug names some files by a time earlier than their events). smdebug uses 3 minutes.
  int64_t file_buffer_us = 3ll * 60 * 1000000;
};

class TimelineReader {
 public:
  TimelineReader(Env* env, std::string trial_dir, TimelineReaderOptions options = {});

  Status Refresh();
  const std::vector<TimelineFile>& files() const { return files_; }
  int64_t FirstTimestampMicros() const;   // end time of the first file, 0 when none
  int64_t LatestTimestampMicros() const;  // end time of the newest file, 0 when none

  // Events overlapping [start_us, end_us): start < end_us and (end > start_us, or an instant or
  // zero-length event with start >= start_us). Sorted by start time.
  Result<std::vector<TimelineEvent>> GetEvents(int64_t start_us, int64_t end_us,
                                               const TimelineQuery& q = {});
  // Time range of steps [start_step, end_step) from events carrying step_num in python timeline
  // files: from the first event of start_step to the first event of end_step. NotFound names the
  // step that has no event.
  Result<StepTimeRange> GetStepTimeRange(int64_t start_step, int64_t end_step);
  Result<std::vector<TimelineEvent>> GetEventsByStep(int64_t start_step, int64_t end_step,
                                                     const TimelineQuery& q = {});
  const ReaderStats& stats() const { return stats_; }

  // Parses one trace file (a JSON array, possibly without its "]" or with a torn last line; or an
  // object with "traceEvents"). Times become epoch microseconds using the file's
  // start_time_since_epoch_in_micros metadata (0 if absent). Bad lines are counted in *stats.
  static std::vector<TimelineEvent> ParseFile(std::string_view contents, std::string_view node_id,
                                              std::string_view suffix,
                                              std::string_view path_for_errors, ReaderStats* stats);

 private:
  struct Cached {
    uint64_t size = 0;
    std::vector<TimelineEvent> events;
  };
  const std::vector<TimelineEvent>* Load(const TimelineFile& f);

  Env* env_;
  std::string trial_dir_;
  TimelineReaderOptions options_;
  std::vector<TimelineFile> files_;  // sorted by end time
  bool listed_ = false;
  std::map<std::string, Cached> cache_;
  ReaderStats stats_;
};

// Convenience for profiler rules: system events of steps [start_step, end_step), with the time
// range taken from `timeline`.
Result<std::vector<SystemMetricEvent>> GetSystemEventsByStep(SystemMetricsReader* system,
                                                             TimelineReader* timeline,
                                                             int64_t start_step, int64_t end_step,
                                                             const SystemMetricsQuery& q = {});

}  // namespace trainscope
