// StepCursor: walks the complete global steps of a growing trial in ascending order, with
// smdebug's step states (Trial::HasPassedStep), without listing every step each time: it probes
// the next integers (a saved step, a skipped step, or one not written yet) and only lists the
// trial's steps after a long gap.
//
// Thread safety: not thread-safe; used by one runner thread.
#pragma once

#include <cstdint>

#include "trainscope/trial.h"

namespace trainscope::rules_internal {

class StepCursor {
 public:
  enum class State { kStep, kWait, kDone };

  // end_step: exclusive, -1 for none. REQUIRES: trial outlives the cursor.
  StepCursor(Trial* trial, int64_t start_step, int64_t end_step);

  // kStep: *step is the next complete step to evaluate. kWait: the next step is not written yet.
  // kDone: the training ended and no step is left, or end_step was reached.
  State Next(int64_t* step);
  // Moves past `step` (the step Next returned).
  void Advance(int64_t step) { next_ = step + 1; }
  int64_t next() const { return next_; }

  // Integers probed one by one before the cursor lists the trial's steps to jump a gap.
  static constexpr int64_t kMaxProbe = 1024;

 private:
  Trial* trial_;
  int64_t next_;
  int64_t end_;
};

}  // namespace trainscope::rules_internal
