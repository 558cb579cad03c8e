#include "trainscope/metrics_feed.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "trainscope/event_log.h"
#include "trainscope/rule_output_format.h"

namespace trainscope {
namespace {

// Read per poll from one rule's events.jsonl at most (a rule writes a few hundred bytes a
// finding); the rest is read on later polls.
constexpr uint64_t kMaxReadPerPoll = 4 << 20;

}  // namespace

MetricsFeed::MetricsFeed(PrometheusExporter* metrics, std::string trial_dir, Env* env)
    : metrics_(metrics),
      trial_path_(std::move(trial_dir)),
      env_(env != nullptr ? env : Env::Default()) {}

void MetricsFeed::Poll(const std::map<std::string, std::optional<RuleEvaluationStatus>>& rules) {
  for (const auto& [rule, status] : rules) {
    ReadNewFindings(rule);
    if (status) metrics_->SetRuleStatus(rule, *status);
  }
  ReadNewActions();
  FollowTrial();
}

// The actions run in the rule workers, which log each outcome to the trial's event log.
void MetricsFeed::ReadNewActions() {
  if (log_broken_) return;
  const std::string path = EventLog::PathFor(trial_path_);
  for (;;) {
    const uint64_t before = log_offset_;
    std::vector<LoggedEvent> events;
    Status s = ReadEvents(env_, path, &log_offset_, &events);
    if (s.code() == StatusCode::kNotFound) return;  // nothing logged yet
    if (!s.ok()) {
      // Its lines are written whole by our workers: a bad one means someone else wrote there.
      log_broken_ = true;
      std::fprintf(stderr,
                   "trainscope run: %s; trainscope_actions_total stops counting (the actions "
                   "still run)\n",
                   s.ToString().c_str());
      return;
    }
    for (const LoggedEvent& e : events) {
      if (e.action) metrics_->RecordAction(*e.action);
    }
    if (log_offset_ == before) return;
  }
}

void MetricsFeed::ReadNewFindings(const std::string& rule) {
  namespace fmt = rule_output_format;
  const std::string path =
      JoinPath(JoinPath(JoinPath(trial_path_, fmt::kRuleOutputDir), rule), fmt::kEventsFile);
  uint64_t& offset = events_offset_[rule];
  auto size = env_->GetFileSize(path);
  if (!size.ok() || *size <= offset) return;
  auto text =
      env_->ReadRange(path, offset, static_cast<size_t>(std::min(*size - offset, kMaxReadPerPoll)));
  if (!text.ok()) return;
  // Only whole lines: one a worker is still appending is read on a later poll.
  size_t begin = 0;
  for (size_t end; (end = text->find('\n', begin)) != std::string::npos; begin = end + 1) {
    const std::string_view line(text->data() + begin, end - begin);
    if (auto f = RuleFindingFromJson(line); f.ok()) metrics_->RecordFinding(*f);
  }
  offset += begin;
}

void MetricsFeed::FollowTrial() {
  if (!trial_) {
    TrialOptions options;
    options.env = env_;
    auto t = Trial::Open(trial_path_, options);
    if (!t.ok()) return;  // no collections file yet: the hook has not started
    trial_ = std::move(*t);
  }
  if (!trial_->Refresh().ok()) return;
  const int64_t last = trial_->last_complete_step();
  if (last < 0) return;
  auto mode = trial_->ModeOf(last);
  metrics_->RecordStep(last, mode.ok() ? std::optional<Mode>(*mode) : std::nullopt);
  if (last == loss_checked_step_) return;
  loss_checked_step_ = last;
  auto names = trial_->TensorNames(Mode::kGlobal, std::nullopt, "", "losses");
  if (!names.ok() || names->empty()) return;
  // The newest step of any loss (a training loss and a validation loss share one name).
  int64_t best_step = -1;
  std::string best_name;
  for (const auto& n : *names) {
    auto steps = trial_->TensorSteps(n);
    if (steps.ok() && !steps->empty() && steps->back() > best_step) {
      best_step = steps->back();
      best_name = n;
    }
  }
  if (best_step < 0 || best_step == loss_step_) return;
  auto v = trial_->ReductionValue(best_name, best_step, Reduction{ReductionOp::kMean});
  if (!v.ok()) return;
  loss_step_ = best_step;
  metrics_->RecordLoss(*v, best_step);
}

}  // namespace trainscope
