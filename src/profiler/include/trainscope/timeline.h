// TimelineWriter: framework events (training phases, steps, data loading, user spans) as Chrome
// trace-event JSON in smdebug's layout, <base>/framework/pevents/<YYYYMMDDHH>/
// <end_us>_<node>_pythontimeline.json (docs/formats/timeline.md).
//
// Record() only appends to an in-memory buffer under a mutex (no I/O, no JSON), so it is cheap
// enough to call several times per training step. A background thread (or Flush()) serialises the
// buffer into the open file, a ".tmp" beside pevents/. A file is rotated when it exceeds
// max_file_size_bytes, when it has been open close_interval_seconds, or when an event ends in a
// different UTC hour than the file's first event; on rotation and on Close() it is finished with
// "]" (a valid JSON array, unlike smdebug's files which may lack it) and renamed into pevents/
// under the end time of its last event. Readers never see a half-written file in pevents/.
//
// Failure is never the training's problem: I/O errors are reported once and the events of the
// failed file are dropped; after file_open_fail_threshold consecutive failed opens the writer
// stops recording (Record becomes a no-op) and says so.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/profiler_format.h"
#include "trainscope/status.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

// One entry of an event's "args" object: a bool, an integer, a floating-point number or a string.
struct TimelineArg {
  using Value = std::variant<int64_t, double, std::string, bool>;
  template <typename T>
  requires std::is_arithmetic_v<T> TimelineArg(std::string k, T v) : key(std::move(k)) {
    if constexpr (std::is_same_v<T, bool>) {
      value = v;
    } else if constexpr (std::is_integral_v<T>) {
      value = static_cast<int64_t>(v);
    } else {
      value = static_cast<double>(v);
    }
  }
  TimelineArg(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  TimelineArg(std::string k, std::string_view v) : key(std::move(k)), value(std::string(v)) {}
  TimelineArg(std::string k, const char* v) : key(std::move(k)), value(std::string(v)) {}
  std::string key;
  Value value;
};
using TimelineArgs = std::vector<TimelineArg>;

// A Step span (StepTimeline's "Step:ModeKeys.<MODE>" rows) for TimelineWriter::RecordSteps.
struct TimelineStepSpan {
  std::string_view phase;  // static storage (StepTimeline::PhaseName); also the event's name
  uint64_t start_us = 0;
  uint64_t dur_us = 0;
  int64_t step = -1;  // the mode step: args "step_num" (a string, as smdebug writes it); < 0: none
  int64_t pid = 0;    // args "pid"
  int64_t global_step = -1;  // args "global_step"
  bool phases = true;        // false: args "phases": false
  bool saved = false;        // true: args "saved": true
  int64_t model_calls = 0;   // >= 2: args "model_calls" (the watched model's calls in the step)
};

struct TimelineWriterOptions {
  // Node id in file names; must not contain '_'. Empty: "<pid>-<hostname>" as smdebug names it.
  std::string node_id;
  std::string suffix = std::string(profiler_format::kPythonTimelineSuffix);
  uint64_t max_file_size_bytes = profiler_format::kDefaultRotateMaxFileSizeBytes;
  double close_interval_seconds = profiler_format::kDefaultRotateFileCloseIntervalSeconds;
  int64_t file_open_fail_threshold = profiler_format::kDefaultFileOpenFailThreshold;
  // Origin of the "ts" values in the files (start_time_since_epoch_in_micros). 0: now.
  uint64_t start_time_us = 0;
  // Epoch microseconds of "now" (tests inject a clock). Default: Env::NowMicros().
  std::function<uint64_t()> clock;
  // Background flush period; 0 disables the thread (the owner calls Flush()).
  int64_t flush_interval_millis = 1000;
  // Events buffered beyond this are dropped (and counted) until the next flush.
  size_t max_buffered_events = 1 << 20;
  // Where one-time reports go. Default: stderr, prefixed "trainscope: ".
  std::function<void(std::string_view)> report;
};

class TimelineWriter {
 public:
  // `env` is not owned and must outlive the writer. REQUIRES: no other live writer with the same
  // base_dir, node_id and suffix (they would share a temporary file).
  static Result<std::unique_ptr<TimelineWriter>> Create(Env* env, std::string base_dir,
                                                        TimelineWriterOptions options);
  ~TimelineWriter();  // Close()
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;

  // A complete event ("ph":"X") of training phase `phase` (its own row: "Step:ModeKeys.TRAIN",
  // "Forward", "DataLoaderIter", ...), starting at epoch microsecond start_us.
  void Record(std::string_view phase, std::string_view name, uint64_t start_us, uint64_t dur_us,
              TimelineArgs args = {});
  // Step spans, the same events as Record(s.phase, s.phase, s.start_us, s.dur_us, {step_num,
  // pid, global_step[, phases][, saved]}) from this thread, at a training's step boundary
  // (StepTimeline batches them): kept as they are, without a heap allocation once the writer's
  // step buffer holds a flush interval's spans, and made into JSON by the flushing thread. The
  // spans a training of short steps records every second would otherwise be thousands of small
  // blocks of its heap, allocated by its thread and freed by the writer's, between the blocks
  // of its own tensors (bench/step_anatomy.py: the MLP's malloc slowed by a few us a step).
  void RecordSteps(std::span<const TimelineStepSpan> spans);
  // An instant event ("ph":"i"); scope 'g' (global), 'p' (process) or 't' (thread).
  void RecordInstant(std::string_view phase, std::string_view name, uint64_t ts_us,
                     TimelineArgs args = {}, char scope = 't');

  // Writes the buffered events now (rotating as the rules say). Returns the first error since the
  // last call, after reporting it.
  Status Flush();
  // Flushes, finishes the open file and moves it into pevents/. Idempotent; Record after Close is
  // a no-op.
  Status Close();

  uint64_t NowMicros() const { return options_.clock(); }
  uint64_t start_time_us() const { return options_.start_time_us; }
  const std::string& node_id() const { return options_.node_id; }
  // Events recorded, written to files, and dropped (buffer full, I/O error, after Close).
  int64_t events_recorded() const { return recorded_.load(); }
  int64_t events_written() const { return written_.load(); }
  int64_t events_dropped() const { return dropped_.load(); }
  // Paths (relative to base_dir) of the files finished so far.
  std::vector<std::string> finished_files() const;

 private:
  struct Pending;
  struct PendingStep {
    TimelineStepSpan span;
    int64_t tid;
  };
  class FileState;
  TimelineWriter(Env* env, std::string base_dir, TimelineWriterOptions options);
  void Enqueue(char ph, std::string_view phase, std::string_view name, uint64_t ts_us,
               uint64_t dur_us, TimelineArgs args, char scope);
  void Run() TS_EXCLUDES(run_mu_);
  Status FlushImpl(bool finish_file) TS_EXCLUDES(buf_mu_, file_mu_);

  TimelineWriterOptions options_;
  Env* env_;
  std::string base_dir_;

  Mutex buf_mu_;
  std::vector<Pending> buffer_ TS_GUARDED_BY(buf_mu_);
  // RecordSteps' spans; swapped with steps_flushing_ (cleared, its capacity kept) by the flush.
  std::vector<PendingStep> steps_ TS_GUARDED_BY(buf_mu_);
  bool closed_ TS_GUARDED_BY(buf_mu_) = false;

  mutable Mutex file_mu_;  // serialises Flush/Close
  std::unique_ptr<FileState> file_ TS_GUARDED_BY(file_mu_) TS_PT_GUARDED_BY(file_mu_);
  std::vector<PendingStep> steps_flushing_ TS_GUARDED_BY(file_mu_);

  Mutex run_mu_;
  CondVar cv_;
  bool stop_ TS_GUARDED_BY(run_mu_) = false;
  std::thread thread_;

  std::atomic<int64_t> recorded_{0}, written_{0}, dropped_{0};
  std::atomic<bool> healthy_{true};
};

// Records a complete event for the lifetime of the object: start at construction, duration at
// destruction. A null writer makes it a no-op. Not copyable; use on one thread.
class ScopedSpan {
 public:
  ScopedSpan(TimelineWriter* writer, std::string phase, std::string name, TimelineArgs args = {});
  ~ScopedSpan();
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;
  void AddArg(TimelineArg arg) { args_.push_back(std::move(arg)); }

 private:
  TimelineWriter* writer_;
  std::string phase_, name_;
  TimelineArgs args_;
  uint64_t start_us_ = 0;
};

}  // namespace trainscope
