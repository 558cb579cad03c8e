// StepTracker: the global steps of a trial, their modes, and which of them are complete, by
// smdebug's rules (reference: smdebug.md 1.5 and 4.2; docs/formats/trial.md "Reading").
//
// A step is registered once per (step, worker) index file that holds at least one entry.
// A global step is complete when
//   - num_workers index files were seen for it, or
//   - the job ended and the final refresh was done (loaded_all_steps), or
//   - step <= last_complete_step,
// where last_complete_step is the largest step written by all workers, moved forward by the
// incomplete-step window: while more than `window` known steps lie after last_complete_step,
// it jumps to the (window/2)-th of them. (smdebug compares the number of known steps with
// last_complete_step + 1, which only counts pending steps when steps are dense from 0, and jumps
// once per refresh; we count pending steps and jump until at most `window` wait.)
//
// Mode mapping: the first index file read for a global step fixes its (mode, mode_step); the
// first global step read for a (mode, mode_step) fixes the reverse mapping, as in smdebug.
//
// Thread safety: not thread-safe; the Trial guards it with its mutex.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "trainscope/modes.h"
#include "trainscope/trial.h"

namespace trainscope {

class StepTracker {
 public:
  // REQUIRES: num_workers >= 1, window >= 1.
  StepTracker(int num_workers, int64_t window);

  // Registers one (global_step, worker) index file with at least one entry. Each (step, worker)
  // pair must be registered at most once (the Trial never reads a file twice).
  void AddWorkerStep(int64_t global_step, Mode mode, int64_t mode_step);
  // Applies the incomplete-step window; call after each batch of AddWorkerStep.
  void ApplyWindow();
  // The job ended and the last refresh is done: every known step is complete.
  void SetLoadedAll();

  bool loaded_all_steps() const { return loaded_all_; }
  int64_t last_complete_step() const { return last_complete_; }
  int num_workers() const { return num_workers_; }
  bool empty() const { return steps_.empty(); }
  int64_t max_step() const { return steps_.empty() ? -1 : steps_.back().step; }

  bool IsComplete(int64_t global_step) const;
  // Sorted steps of `mode` (mode steps unless kGlobal).
  std::vector<int64_t> Steps(Mode mode, bool show_incomplete) const;
  // Modes that have at least one step, without kGlobal (smdebug's modes()).
  std::vector<Mode> Modes() const;
  // (mode, mode_step) of a known global step.
  std::optional<std::pair<Mode, int64_t>> ModeOf(int64_t global_step) const;
  // Global step of (mode, mode_step); kGlobal maps a step to itself if it is known.
  std::optional<int64_t> GlobalStep(Mode mode, int64_t mode_step) const;
  // smdebug's has_passed_step (reference section 4.2).
  StepState HasPassedStep(int64_t step, Mode mode) const;
  // Number of (step, worker) index files registered for a global step (0 if unknown).
  int WorkersAt(int64_t global_step) const;

 private:
  struct StepInfo {
    int64_t step;
    int64_t mode_step;
    uint32_t workers;  // index files seen for this step
    Mode mode;
  };
  // (mode_step, global_step), sorted by mode_step; one vector per mode kTrain..kPredict.
  using ModeMap = std::vector<std::pair<int64_t, int64_t>>;

  const StepInfo* Find(int64_t global_step) const;
  // REQUIRES: m != kGlobal.
  const ModeMap& ModeSteps(Mode m) const { return mode_steps_[static_cast<int>(m) - 1]; }
  ModeMap& ModeSteps(Mode m) { return mode_steps_[static_cast<int>(m) - 1]; }

  int num_workers_;
  int64_t window_;
  bool loaded_all_ = false;
  int64_t last_complete_ = -1;
  std::vector<StepInfo> steps_;  // sorted by step
  std::array<ModeMap, 3> mode_steps_;
};

}  // namespace trainscope
