#include "trainscope/stop_action.h"

namespace trainscope {

StopRequest StopRequestFromFinding(const RuleFinding& f) {
  StopRequest r;
  r.source = "rule";
  r.rule = f.rule;
  r.step = f.step;
  r.mode = f.mode;
  r.explanation = f.explanation.empty() ? DescribeFinding(f) : f.explanation;
  r.recommendation = f.recommendation;
  r.time_micros = f.time_micros;
  return r;
}

namespace {

class StopTrainingAction final : public Action {
 public:
  StopTrainingAction(Env* env, std::string trial_dir, OutcomeCallback on_outcome)
      : env_(env != nullptr ? env : Env::Default()),
        trial_dir_(std::move(trial_dir)),
        on_outcome_(std::move(on_outcome)) {}

  std::string_view kind() const override { return "stop"; }
  std::string target() const override { return StopSignal::PathFor(trial_dir_); }

  Status Notify(const RuleFinding& finding) override {
    if (finding.kind != FindingKind::kFinding) return Status::OK();
    StopRequest request = StopRequestFromFinding(finding);
    if (request.time_micros == 0) request.time_micros = static_cast<int64_t>(env_->NowMicros());
    const bool already = env_->FileExists(target());
    Status s = StopSignal::Raise(env_, trial_dir_, request);
    if (on_outcome_) {
      ActionOutcome o;
      o.action = "stop";
      o.target = target();
      o.rule = finding.rule;
      o.step = finding.step;
      o.attempts = 1;
      o.result = s.ok() ? ActionResult::kDone : ActionResult::kFailed;
      o.detail = !s.ok()   ? s.ToString()
                 : already ? "stop already requested; first reason kept"
                           : "stop requested";
      o.time_micros = static_cast<int64_t>(env_->NowMicros());
      on_outcome_(o);
    }
    return s;
  }

 private:
  Env* env_;
  std::string trial_dir_;
  OutcomeCallback on_outcome_;
};

}  // namespace

std::unique_ptr<Action> NewStopTrainingAction(Env* env, std::string trial_dir,
                                              OutcomeCallback on_outcome) {
  return std::make_unique<StopTrainingAction>(env, std::move(trial_dir), std::move(on_outcome));
}

}  // namespace trainscope
