#include "trainscope/rule_runner.h"

#include <atomic>
#include <exception>
#include <map>
#include <unordered_map>

#include "rules/rule_eval.h"
#include "rules/rule_output.h"
#include "rules/step_cursor.h"
#include "trainscope/rule_output_format.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

using rules_internal::RuleOutput;
using rules_internal::StepCursor;

class RuleRunner::Impl {
 public:
  // One rule, touched by the runner's thread only. Its RuleState, which states() reads from any
  // thread, is states_[index] (a field here could not be annotated: a lock of the Impl cannot
  // guard a field of Entry).
  struct Entry {
    std::unique_ptr<Rule> rule;
    std::unique_ptr<RuleOutput> output;
    size_t index = 0;    // in entries_ and states_
    bool active = true;  // still evaluated
    std::unordered_map<std::string, int> events_per_tensor;
    int64_t last_status_write_us = 0;
    bool dirty = false;  // progress not yet in status.json
  };

  Impl(RuleRunner* owner, RunnerOptions options)
      : owner_(owner),
        options_(std::move(options)),
        cursor_(owner->trial_.get(), options_.start_step, options_.end_step) {}

  int64_t Now() const { return options_.now_micros(); }

  RuleState& StateOf(const Entry& e) TS_REQUIRES(mu_) { return states_[e.index]; }

  void KeepError(const Status& s) {
    if (!s.ok() && first_error_.ok()) first_error_ = s;
  }

  void WriteStatus(Entry& e) {
    e.dirty = false;
    if (!e.output) return;
    const int64_t now = Now();
    e.last_status_write_us = now;
    RuleState copy;
    {
      MutexLock lock(&mu_);
      copy = StateOf(e);
    }
    KeepError(e.output->WriteStatus(copy, owner_->trial_->path(), now));
  }

  void SetError(Entry& e, const std::string& message) {
    {
      MutexLock lock(&mu_);
      RuleState& state = StateOf(e);
      state.status = RuleEvaluationStatus::kError;
      state.message = message;
      state.finished = true;
    }
    e.active = false;
    WriteStatus(e);
  }

  // Records what a rule returned for a step (or tick, or finish). `step` is -1 for a tick.
  void Record(Entry& e, const Result<Verdict>& verdict, int64_t step, const char* what) {
    if (!verdict.ok()) {
      if (rules_internal::IsNoData(verdict.status())) {
        MutexLock lock(&mu_);
        if (step >= 0) ++StateOf(e).steps_skipped;
        return;
      }
      SetError(e, std::string(what) + (step >= 0 ? " at step " + std::to_string(step) : "") + ": " +
                      verdict.status().ToString());
      return;
    }
    if (step >= 0) {
      MutexLock lock(&mu_);
      RuleState& state = StateOf(e);
      ++state.steps_evaluated;
      state.last_step = step;
      e.dirty = true;
    }
    const Verdict& v = *verdict;
    std::vector<RuleFinding> findings = v.findings;
    if (v.condition_met && findings.empty()) {
      RuleFinding f;
      f.rule = e.rule->name();
      f.step = step;
      f.condition = "condition met";
      f.explanation = "the rule's condition was met";
      findings.push_back(std::move(f));
    }
    bool changed = false;
    for (auto& f : findings) {
      if (f.rule.empty()) f.rule = e.rule->name();
      if (f.step < 0 && step >= 0) f.step = step;
      if (f.step >= 0 && !f.mode) {
        auto [mode, mode_step] = owner_->data_->StepMode(f.step);
        f.mode = mode;
        f.mode_step = mode_step;
      }
      if (f.trial.empty()) f.trial = owner_->trial_->path();
      if (f.time_micros == 0) f.time_micros = Now();
      int& count = e.events_per_tensor[f.tensor];
      bool write = false;
      {
        MutexLock lock(&mu_);
        RuleState& state = StateOf(e);
        if (state.first_finding_step < 0) state.first_finding_step = f.step;
        if (state.status != RuleEvaluationStatus::kIssuesFound) {
          state.status = RuleEvaluationStatus::kIssuesFound;
          state.message = f.explanation;
          changed = true;
        }
        if (count >= options_.max_events_per_tensor) {
          ++state.suppressed;
          e.dirty = true;
        } else {
          ++count;
          ++state.findings;
          changed = true;
          write = true;
        }
      }
      if (!write) continue;
      const std::string json = RuleFindingToJson(f);
      if (e.output) KeepError(e.output->AppendEvent(json));
      for (const auto& sink : sinks_) sink(f, json);
    }
    if (v.end_of_rule) {
      e.active = false;
      MutexLock lock(&mu_);
      StateOf(e).finished = true;
      changed = true;
    }
    if (changed) WriteStatus(e);
  }

  template <typename F>
  Result<Verdict> Guard(Entry& e, F&& f) {
    try {
      return f();
    } catch (const std::exception& ex) {
      return Status::Internal("rule " + e.rule->name() + " threw: " + ex.what());
    } catch (...) {
      return Status::Internal("rule " + e.rule->name() + " threw a non-standard exception");
    }
  }

  void EvaluateStep(int64_t step) {
    owner_->data_->BeginStep(step);
    for (auto& e : entries_) {
      if (!e.active) continue;
      Result<Verdict> v = EvaluateRuleAtStep(*e.rule, *owner_->data_, step);
      Record(e, v, step, "InvokeAtStep");
    }
    ++steps_evaluated_;
    last_step_ = step;
    PublishStats();
  }

  // Copies what stats() reports into stats_. Rules, their StateBytes() and the RuleData cache are
  // touched by the runner's thread only, so it takes the snapshot (after each step, tick and
  // final round) and stats() only copies it under mu_, from any thread.
  void PublishStats() {
    RunnerStats s;
    s.steps_evaluated = steps_evaluated_;
    s.last_step = last_step_;
    s.polls = polls_;
    for (const auto& e : entries_) {
      s.tracked_tensor_keys += static_cast<int64_t>(e.events_per_tensor.size());
      s.rule_state_bytes += e.rule->StateBytes();
    }
    s.data = owner_->data_->stats();
    MutexLock lock(&mu_);
    stats_ = s;
  }

  void Tick() {
    const int64_t now = Now();
    for (auto& e : entries_) {
      if (!e.active) continue;
      Result<Verdict> v = Guard(e, [&]() { return e.rule->OnTick(now); });
      Record(e, v, -1, "OnTick");
      if (e.dirty &&
          now - e.last_status_write_us >=
              std::chrono::duration_cast<std::chrono::microseconds>(options_.status_interval)
                  .count()) {
        WriteStatus(e);
      }
    }
    PublishStats();
  }

  void Finalize(bool stopped) {
    for (auto& e : entries_) {
      if (e.active && !stopped) {
        Result<Verdict> v = Guard(e, [&]() { return e.rule->Finish(last_step_); });
        Record(e, v, -1, "Finish");
      }
      {
        MutexLock lock(&mu_);
        RuleState& state = StateOf(e);
        if (state.status == RuleEvaluationStatus::kError) continue;
        if (state.findings > 0 || state.suppressed > 0) {
          state.status = RuleEvaluationStatus::kIssuesFound;
        } else if (stopped) {
          state.status = RuleEvaluationStatus::kStopped;
          state.message = "stopped before the training ended";
        } else {
          state.status = RuleEvaluationStatus::kNoIssuesFound;
          const std::string note = e.rule->StatusNote();
          state.message = note.empty()
                              ? "no issues found in " + std::to_string(state.steps_evaluated) +
                                    " evaluated steps"
                              : "no issues found: " + note;
        }
        if (stopped && state.status == RuleEvaluationStatus::kIssuesFound) {
          state.message += " (stopped before the training ended)";
        }
        state.finished = true;
      }
      e.active = false;
      WriteStatus(e);
    }
    done_ = true;
    PublishStats();
  }

 private:
  friend class RuleRunner;

  RuleRunner* owner_;
  RunnerOptions options_;
  StepCursor cursor_;
  std::vector<Entry> entries_;
  std::vector<FindingSink> sinks_;
  std::atomic<bool> stop_{false};
  bool done_ = false;
  int64_t steps_evaluated_ = 0;
  int64_t last_step_ = -1;
  int64_t polls_ = 0;
  Status first_error_;
  mutable Mutex mu_;
  RunnerStats stats_ TS_GUARDED_BY(mu_);  // the last PublishStats()
  // Each rule's state, for states(); states_[i] is entries_[i]'s (entries_ is the runner
  // thread's alone).
  std::vector<RuleState> states_ TS_GUARDED_BY(mu_);
};

Result<std::unique_ptr<RuleRunner>> RuleRunner::Open(const std::string& path, RunnerOptions options,
                                                     TrialOptions trial_options) {
  if (trial_options.env == nullptr) trial_options.env = options.env;
  // The runner refreshes the trial itself (Poll, WaitForChange); queries made by rules in
  // between must not list folders again.
  if (trial_options.refresh_interval.count() == 0) {
    trial_options.refresh_interval = std::chrono::hours(1);
  }
  TS_ASSIGN_OR_RETURN(auto trial, Trial::Open(path, trial_options));
  return std::make_unique<RuleRunner>(std::shared_ptr<Trial>(std::move(trial)), std::move(options));
}

RuleRunner::RuleRunner(std::shared_ptr<Trial> trial, RunnerOptions options)
    : trial_(std::move(trial)) {
  if (options.env == nullptr) options.env = Env::Default();
  if (!options.now_micros) {
    Env* env = options.env;
    options.now_micros = [env]() { return static_cast<int64_t>(env->NowMicros()); };
  }
  if (options.output_dir.empty()) {
    options.output_dir = JoinPath(trial_->path(), rule_output_format::kRuleOutputDir);
  }
  if (options.max_events_per_tensor < 1) options.max_events_per_tensor = 1;
  RuleDataOptions data_options;
  data_options.max_cached_steps = options.max_cached_steps;
  data_options.now_micros = options.now_micros;
  data_options.profiler_dir = options.profiler_dir;
  data_ = std::make_unique<RuleData>(trial_, data_options);
  impl_ = std::make_unique<Impl>(this, std::move(options));
}

RuleRunner::~RuleRunner() = default;

std::string RuleRunner::RuleOutputDir(const std::string& rule) const {
  return JoinPath(impl_->options_.output_dir, rule);
}

Status RuleRunner::AddRule(std::unique_ptr<Rule> rule) {
  if (rule == nullptr) return Status::InvalidArgument("RuleRunner::AddRule: null rule");
  for (const auto& e : impl_->entries_) {
    if (e.rule->name() == rule->name()) {
      return Status::InvalidArgument("RuleRunner: a rule named " + rule->name() +
                                     " was added already; rule-output/<name>/ must be unique");
    }
  }
  Impl::Entry e;
  RuleState state;
  state.rule = rule->name();
  Status bind = rule->Bind(data_.get());
  state.parameters = rule->Parameters();
  e.rule = std::move(rule);
  if (impl_->options_.write_output) {
    e.output = std::make_unique<rules_internal::RuleOutput>(impl_->options_.env,
                                                            RuleOutputDir(state.rule));
    Status s = e.output->Open();
    if (!s.ok()) {
      e.output.reset();
      impl_->KeepError(s);
      return s;
    }
  }
  e.index = impl_->entries_.size();
  impl_->entries_.push_back(std::move(e));
  {
    MutexLock lock(&impl_->mu_);
    impl_->states_.push_back(std::move(state));
  }
  Impl::Entry& added = impl_->entries_.back();
  if (!bind.ok()) {
    impl_->SetError(added, "cannot start: " + bind.ToString());
  } else {
    impl_->WriteStatus(added);
  }
  impl_->PublishStats();
  return Status::OK();
}

void RuleRunner::AddSink(FindingSink sink) { impl_->sinks_.push_back(std::move(sink)); }

Result<bool> RuleRunner::Poll() {
  Impl& m = *impl_;
  if (m.done_) return true;
  ++m.polls_;
  Status refreshed = trial_->Refresh();
  if (!refreshed.ok() && refreshed.code() != StatusCode::kUnavailable) return refreshed;
  while (true) {
    if (m.stop_.load()) {
      m.Finalize(/*stopped=*/true);
      return true;
    }
    int64_t step = -1;
    auto state = m.cursor_.Next(&step);
    if (state == StepCursor::State::kStep) {
      m.EvaluateStep(step);
      m.cursor_.Advance(step);
      continue;
    }
    if (state == StepCursor::State::kDone) {
      m.Finalize(/*stopped=*/false);
      return true;
    }
    break;  // kWait
  }
  m.Tick();
  return false;
}

Status RuleRunner::Run() {
  while (true) {
    TS_ASSIGN_OR_RETURN(bool done, Poll());
    if (done) break;
    Status s = trial_->WaitForChange(impl_->options_.wait_timeout);
    if (!s.ok() && s.code() != StatusCode::kUnavailable) return s;
  }
  return impl_->first_error_;
}

void RuleRunner::Stop() { impl_->stop_.store(true); }

std::vector<RuleState> RuleRunner::states() const {
  MutexLock lock(&impl_->mu_);
  return impl_->states_;
}

RunnerStats RuleRunner::stats() const {
  MutexLock lock(&impl_->mu_);
  return impl_->stats_;
}

}  // namespace trainscope
