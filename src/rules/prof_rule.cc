#include "rules/prof_rule.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "trainscope/rule_data.h"
#include "trainscope/trial.h"

namespace trainscope::rules_internal {

ParamSpec ScanIntervalSpec() {
  return {"scan_interval_us", ParamType::kInt, "60000000",
          "smdebug's scan window in microseconds (accepted; trainscope reads the metrics as they "
          "arrive)"};
}

Status ProfilerRule::OnBind() {
  feed_ = &data().profiler_feed();
  subscriber_ = feed_->Subscribe();
  return Status::OK();
}

Result<Verdict> ProfilerRule::InvokeAtStep(int64_t) { return Verdict::NotMet(); }

Result<Verdict> ProfilerRule::OnTick(int64_t now_micros) {
  if (polled_ && now_micros - last_poll_us_ < kPollIntervalUs) return Verdict::NotMet();
  polled_ = true;
  last_poll_us_ = now_micros;
  return Consume(*feed_->Take(subscriber_, /*final=*/false));
}

Result<Verdict> ProfilerRule::Finish(int64_t) {
  // The hook may still be finishing its last timeline file: give it a moment.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (feed_->TimelineOpen() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Verdict v = Consume(*feed_->Take(subscriber_, /*final=*/true));
  OnEnd(&v);
  return v;
}

Verdict ProfilerRule::Consume(const ProfilerBatch& batch) {
  Verdict v;
  // Step starts first, so datapoints of the same batch can be placed at a step.
  for (const TimelineEvent& e : batch.framework) {
    if (IsStepEvent(e) && e.step) step_starts_.emplace_back(e.start_us, *e.step);
  }
  std::sort(step_starts_.begin(), step_starts_.end());
  // Bounded: past 1024 entries every other one is dropped (older steps are then known to within
  // a few steps, recent ones exactly after the next batch).
  while (step_starts_.size() > 1024) {
    std::deque<std::pair<int64_t, int64_t>> thinned;
    for (size_t k = 0; k < step_starts_.size(); k += 2) thinned.push_back(step_starts_[k]);
    if (thinned.back() != step_starts_.back()) thinned.push_back(step_starts_.back());
    step_starts_ = std::move(thinned);
  }
  size_t i = 0, j = 0;
  while (i < batch.datapoints.size() || j < batch.framework.size()) {
    const bool take_dp =
        j >= batch.framework.size() ||
        (i < batch.datapoints.size() && batch.datapoints[i].ts_us <= batch.framework[j].start_us);
    if (take_dp) {
      ++datapoints_;
      OnDatapoint(batch.datapoints[i++], &v);
    } else {
      ++framework_events_;
      OnFramework(batch.framework[j++], &v);
    }
  }
  AfterBatch(&v);
  return v;
}

void ProfilerRule::OnDatapoint(const Datapoint&, Verdict*) {}
void ProfilerRule::OnFramework(const TimelineEvent&, Verdict*) {}
void ProfilerRule::AfterBatch(Verdict*) {}
void ProfilerRule::OnEnd(Verdict*) {}

std::string ProfilerRule::StatusNote() const {
  if (NeedsGpu() && !feed().saw_gpu()) {
    return "no GPU metrics were recorded (no NVIDIA GPU, or NVML could not be loaded, where the "
           "training ran), so there was nothing for this GPU rule to check";
  }
  std::string s = Summary();
  if (!s.empty()) return s;
  if (datapoints_ == 0 && framework_events_ == 0) {
    return "no profiler data was recorded (system/ and framework/ are empty): nothing to check";
  }
  return "checked " + std::to_string(datapoints_) + " system samples and " +
         std::to_string(framework_events_) + " framework events";
}

size_t ProfilerRule::StateBytes() const {
  return sizeof(*this) + step_starts_.size() * 16 + OwnStateBytes();
}

int64_t ProfilerRule::StepInfoUntil() const {
  return step_starts_.empty() ? 0 : step_starts_.back().first;
}

int64_t ProfilerRule::StepAt(int64_t ts_us) const {
  auto it =
      std::upper_bound(step_starts_.begin(), step_starts_.end(), std::make_pair(ts_us, INT64_MAX));
  if (it == step_starts_.begin()) return -1;
  return std::prev(it)->second;
}

std::string ProfilerRule::NotJudgedYet(int64_t seen, const char* what) const {
  const int64_t patience = params().Int("patience");
  if (seen > patience) return {};
  return std::string(" (not judged: the rule judges after more than patience=") +
         std::to_string(patience) + " " + what + " and saw " + std::to_string(seen) +
         "; set a lower patience for a run this short)";
}

std::string ProfilerRule::When(int64_t ts_us) const {
  std::string s = Num(static_cast<double>(ts_us - feed().first_us()) / 1e6) + " s into the run";
  const int64_t step = StepAt(ts_us);
  if (step >= 0) s += " (step " + std::to_string(step) + ")";
  return s;
}

RuleFinding ProfilerRule::NewProfilerFinding(int64_t ts_us, std::string series) const {
  RuleFinding f = NewProfilerFindingAtStep(StepAt(ts_us));
  f.tensor = std::move(series);
  return f;
}

RuleFinding ProfilerRule::NewProfilerFindingAtStep(int64_t step) const {
  RuleFinding f = NewFinding(step);
  f.trial = data().ProfilerDir();
  return f;
}

bool ProfilerRule::IsStepEvent(const TimelineEvent& e) {
  return e.ph == 'X' && e.phase.rfind("Step:", 0) == 0;
}

bool ProfilerRule::PhasesKept(const TimelineEvent& e) {
  const std::string* kept = e.Arg("phases");
  return kept == nullptr || *kept != "false";
}

bool ProfilerRule::IsModelPhase(const TimelineEvent& e) {
  return e.ph == 'X' && (e.phase.rfind("Forward", 0) == 0 || e.phase.rfind("Backward", 0) == 0 ||
                         e.phase.rfind("Optimizer", 0) == 0);
}

bool ProfilerRule::IsDataLoaderWait(const TimelineEvent& e) {
  if (e.ph != 'X') return false;
  auto has = [&](std::string_view s) {
    return e.phase.find(s) != std::string::npos || e.name.find(s) != std::string::npos;
  };
  return has("DataLoaderIter") && !has("DataLoaderIterInitialize") && !has("DataLoaderWorker");
}

bool ProfilerRule::IsDataLoaderWorker(const TimelineEvent& e) {
  return e.ph == 'X' && (e.phase.find("DataLoaderWorker") != std::string::npos ||
                         e.name.find("DataLoaderWorker") != std::string::npos);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

void Window::Add(double v) {
  if (values_.size() < capacity_) {
    values_.push_back(v);
    return;
  }
  values_[next_] = v;
  next_ = (next_ + 1) % capacity_;
}

std::vector<double> Window::Values() const {
  if (values_.size() < capacity_) return values_;
  std::vector<double> out(values_.begin() + static_cast<std::ptrdiff_t>(next_), values_.end());
  out.insert(out.end(), values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(next_));
  return out;
}

double Window::Mean() const {
  if (values_.empty()) return NAN;
  double s = 0;
  for (double v : values_) s += v;
  return s / static_cast<double>(values_.size());
}

}  // namespace trainscope::rules_internal
