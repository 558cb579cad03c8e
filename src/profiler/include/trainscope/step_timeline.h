// StepTimeline: a framework timeline's Step spans, one per step boundary, and the
// PhaseMinIntervalInMilliseconds decision (docs/formats/framework_profiling.md), in one call per
// boundary.
//
// The step boundary is a training's hottest trainscope callback when its steps are short (an
// MLP's 0.3 ms step): Begin() ends the step in progress (a complete event of phase
// "Step:ModeKeys.<MODE>", named as its phase, with args step_num (the mode step, a string, as
// smdebug writes it), pid, global_step, "phases": false when the step's Forward, Backward and
// Optimizer spans were left out, "saved": true when the debugger's capture copied or reduced
// Hook::kSavedStepBytes or more in the step: its time is partly trainscope's, and "model_calls":
// N when the watched model was called N >= 2 times in it), starts the next, and says whether the
// next one records its phases. The Python hook calls it through one binding together with
// Hook::Step().
//
// Spans reach the writer in batches (Flush: at least every 64 spans or 100 ms of step time, and
// at End(); the owner calls End() or Flush() before destroying it) through
// TimelineWriter::RecordSteps: one step costs a POD appended to a vector that never reallocates,
// one batch a lock and a copy of PODs; the events' strings are made by the writer's thread. The
// timeline's files close every RotateFileCloseIntervalInSeconds (1 s or more) anyway, so readers
// see the spans no later. The newest `keep` spans are also kept in memory
// (hook.get_profiler_data()), in blocks of kKeptBlock spans allocated as the spans come and never
// freed before the timeline: the training's heap gets no small block from a step boundary that
// outlives the step (each would sit between the blocks of the training's own tensors).
//
// Thread safety: none (the training thread's); the writer it records into is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "trainscope/modes.h"
#include "trainscope/timeline.h"

namespace trainscope {

class StepTimeline {
 public:
  struct Span {
    Mode mode;
    uint64_t start_us;
    uint64_t dur_us;
    int64_t step;  // mode step
  };
  static constexpr size_t kBatchSpans = 64;
  static constexpr uint64_t kBatchMicros = 100000;
  static constexpr size_t kKeptBlock = 4096;  // 128 KiB: glibc's malloc maps it outside the heap

  // `writer` (not null) is not owned and must outlive this object (a closed writer drops what it
  // gets). phase_period_us: PhaseMinIntervalInMilliseconds in microseconds (0: every step records
  // its phases). pid: the args' pid.
  StepTimeline(TimelineWriter* writer, int64_t pid, uint64_t phase_period_us, size_t keep);
  StepTimeline(const StepTimeline&) = delete;
  StepTimeline& operator=(const StepTimeline&) = delete;

  // A step boundary at t_us: the step in progress (if any) ends at t_us and is recorded; the
  // step (mode, mode_step, global_step) begins. Returns whether it records its phases: true
  // when the period is 0, or when at least the period has passed since the beginning of the
  // last step that recorded them. The step that ends: `ended_saved`, the debugger's capture
  // did real work in it (its span's "saved": true); `ended_model_calls`, the watched model's
  // calls in it (its span's "model_calls" when 2 or more).
  bool Begin(uint64_t t_us, Mode mode, int64_t mode_step, int64_t global_step,
             bool ended_saved = false, int64_t ended_model_calls = 0);
  // Ends the step in progress at t_us (a mode change, the end of profiling; no-op without one)
  // and hands the writer every span not handed yet.
  void End(uint64_t t_us, bool ended_saved = false, int64_t ended_model_calls = 0);
  // Hands the writer the spans not handed yet.
  void Flush();

  // The writer's clock (epoch microseconds).
  uint64_t Now() const { return writer_->NowMicros(); }
  bool in_step() const { return in_step_; }
  // The mode step of the step in progress; -1 between steps (before the first, after End()).
  int64_t mode_step() const { return in_step_ ? mode_step_ : -1; }
  // The newest spans recorded (at most `keep`), oldest first.
  std::vector<Span> kept() const;
  // The newest span recorded; false if none is kept (keep 0, or none recorded yet).
  bool last_kept(Span* out) const;

  // "Step:ModeKeys.TRAIN" ... "Step:ModeKeys.GLOBAL".
  static std::string_view PhaseName(Mode mode);

 private:
  void EndStep(uint64_t t_us, bool saved,
               int64_t model_calls);  // the step in progress into the batch (and kept)
  void Keep(const Span& span);
  Span& KeptAt(size_t slot) { return kept_blocks_[slot / kKeptBlock][slot % kKeptBlock]; }
  const Span& KeptAt(size_t slot) const {
    return kept_blocks_[slot / kKeptBlock][slot % kKeptBlock];
  }

  TimelineWriter* writer_;
  int64_t pid_;
  uint64_t period_us_;
  size_t keep_;
  bool in_step_ = false;
  bool phases_on_ = true;
  bool phases_started_ = false;  // some step recorded its phases: last_phases_us_ is valid
  uint64_t last_phases_us_ = 0;
  uint64_t t0_us_ = 0;
  Mode mode_ = Mode::kGlobal;
  int64_t mode_step_ = -1;
  int64_t global_step_ = -1;
  // The kept spans: a ring of keep_ slots over blocks; kept_count_ spans, the oldest at slot
  // kept_head_ once the ring is full (slot 0 before).
  std::vector<std::unique_ptr<Span[]>> kept_blocks_;
  size_t kept_count_ = 0;
  size_t kept_head_ = 0;
  std::vector<TimelineStepSpan> batch_;  // reserved kBatchSpans
  uint64_t batch_t0_us_ = 0;             // start of the first span in batch_
};

}  // namespace trainscope
