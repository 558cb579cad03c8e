#include "rules/step_cursor.h"

#include <algorithm>
#include <vector>

namespace trainscope::rules_internal {

StepCursor::StepCursor(Trial* trial, int64_t start_step, int64_t end_step)
    : trial_(trial), next_(std::max<int64_t>(0, start_step)), end_(end_step) {}

StepCursor::State StepCursor::Next(int64_t* step) {
  // Two rounds at most: probe, then jump the gap once through the step list and probe again.
  for (int round = 0; round < 2; ++round) {
    for (int64_t k = 0; k < kMaxProbe; ++k) {
      const int64_t s = next_ + k;
      if (end_ >= 0 && s >= end_) {
        next_ = s;
        return State::kDone;
      }
      switch (trial_->HasPassedStep(s, Mode::kGlobal)) {
        case StepState::kAvailable:
          next_ = s;
          *step = s;
          return State::kStep;
        case StepState::kNotYetAvailable:
          next_ = s;
          return State::kWait;
        case StepState::kUnavailable:
          break;  // skipped, or beyond the end of a finished trial
      }
    }
    const int64_t probed_to = next_ + kMaxProbe;  // exclusive
    std::vector<int64_t> steps = trial_->Steps(Mode::kGlobal, /*show_incomplete=*/true);
    auto it = std::lower_bound(steps.begin(), steps.end(), probed_to);
    if (it == steps.end()) {
      next_ = probed_to;
      return trial_->loaded_all_steps() ? State::kDone : State::kWait;
    }
    next_ = *it;
  }
  return State::kWait;
}

}  // namespace trainscope::rules_internal
