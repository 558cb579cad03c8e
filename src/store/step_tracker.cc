#include "store/step_tracker.h"

#include <algorithm>
#include <cassert>

namespace trainscope {

namespace {

bool ByStep(const auto& info, int64_t step) { return info.step < step; }
bool ByFirst(const std::pair<int64_t, int64_t>& p, int64_t v) { return p.first < v; }

}  // namespace

StepTracker::StepTracker(int num_workers, int64_t window)
    : num_workers_(std::max(1, num_workers)), window_(std::max<int64_t>(1, window)) {}

void StepTracker::AddWorkerStep(int64_t global_step, Mode mode, int64_t mode_step) {
  auto it = std::lower_bound(steps_.begin(), steps_.end(), global_step, ByStep<StepInfo>);
  if (it == steps_.end() || it->step != global_step) {
    it = steps_.insert(it, StepInfo{global_step, mode_step, 0, mode});
    if (mode != Mode::kGlobal) {
      ModeMap& m = ModeSteps(mode);
      auto mit = std::lower_bound(m.begin(), m.end(), mode_step, ByFirst);
      if (mit == m.end() || mit->first != mode_step) m.insert(mit, {mode_step, global_step});
    }
  }
  ++it->workers;
  if (static_cast<int64_t>(it->workers) >= num_workers_ && global_step > last_complete_) {
    last_complete_ = global_step;
  }
}

void StepTracker::ApplyWindow() {
  const int64_t jump = std::max<int64_t>(1, window_ / 2);
  for (;;) {
    auto first_pending = std::upper_bound(steps_.begin(), steps_.end(), last_complete_,
                                          [](int64_t v, const StepInfo& s) { return v < s.step; });
    const int64_t pending = steps_.end() - first_pending;
    if (pending <= window_) return;
    last_complete_ = (first_pending + (jump - 1))->step;
  }
}

void StepTracker::SetLoadedAll() {
  loaded_all_ = true;
  if (!steps_.empty()) last_complete_ = std::max(last_complete_, steps_.back().step);
}

const StepTracker::StepInfo* StepTracker::Find(int64_t global_step) const {
  auto it = std::lower_bound(steps_.begin(), steps_.end(), global_step, ByStep<StepInfo>);
  return (it != steps_.end() && it->step == global_step) ? &*it : nullptr;
}

int StepTracker::WorkersAt(int64_t global_step) const {
  const StepInfo* s = Find(global_step);
  return s ? static_cast<int>(s->workers) : 0;
}

bool StepTracker::IsComplete(int64_t global_step) const {
  if (loaded_all_ || global_step <= last_complete_) return true;
  const StepInfo* s = Find(global_step);
  return s != nullptr && static_cast<int64_t>(s->workers) >= num_workers_;
}

std::vector<int64_t> StepTracker::Steps(Mode mode, bool show_incomplete) const {
  std::vector<int64_t> out;
  if (mode == Mode::kGlobal) {
    out.reserve(steps_.size());
    for (const StepInfo& s : steps_) {
      if (show_incomplete || loaded_all_ || s.step <= last_complete_ ||
          static_cast<int64_t>(s.workers) >= num_workers_) {
        out.push_back(s.step);
      }
    }
    return out;
  }
  const ModeMap& m = ModeSteps(mode);
  out.reserve(m.size());
  for (const auto& [mode_step, global] : m) {
    if (show_incomplete || IsComplete(global)) out.push_back(mode_step);
  }
  return out;
}

std::vector<Mode> StepTracker::Modes() const {
  std::vector<Mode> out;
  for (Mode m : {Mode::kTrain, Mode::kEval, Mode::kPredict}) {
    if (!ModeSteps(m).empty()) out.push_back(m);
  }
  return out;
}

std::optional<std::pair<Mode, int64_t>> StepTracker::ModeOf(int64_t global_step) const {
  const StepInfo* s = Find(global_step);
  if (s == nullptr) return std::nullopt;
  return std::make_pair(s->mode, s->mode_step);
}

std::optional<int64_t> StepTracker::GlobalStep(Mode mode, int64_t mode_step) const {
  if (mode == Mode::kGlobal) {
    if (Find(mode_step) == nullptr) return std::nullopt;
    return mode_step;
  }
  const ModeMap& m = ModeSteps(mode);
  auto it = std::lower_bound(m.begin(), m.end(), mode_step, ByFirst);
  if (it == m.end() || it->first != mode_step) return std::nullopt;
  return it->second;
}

StepState StepTracker::HasPassedStep(int64_t step, Mode mode) const {
  // The first known step (of `mode`) at or after `step`, and its global step.
  std::optional<std::pair<int64_t, int64_t>> next;  // (step in mode, global step)
  if (mode == Mode::kGlobal) {
    auto it = std::lower_bound(steps_.begin(), steps_.end(), step, ByStep<StepInfo>);
    if (it != steps_.end()) next = std::make_pair(it->step, it->step);
  } else {
    const ModeMap& m = ModeSteps(mode);
    auto it = std::lower_bound(m.begin(), m.end(), step, ByFirst);
    if (it != m.end()) next = *it;
  }
  if (!next) return loaded_all_ ? StepState::kUnavailable : StepState::kNotYetAvailable;
  const auto [found, global] = *next;
  if (found > step) {
    // `step` was skipped if every worker is already past the next step.
    return last_complete_ >= global ? StepState::kUnavailable : StepState::kNotYetAvailable;
  }
  if (WorkersAt(global) >= num_workers_ || loaded_all_ || global <= last_complete_) {
    return StepState::kAvailable;
  }
  return StepState::kNotYetAvailable;
}

}  // namespace trainscope
