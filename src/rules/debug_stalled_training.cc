// StalledTrainingRule (docs/rules/StalledTrainingRule.md): no new step was written for
// `threshold` seconds while the training has not ended.
#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

class StalledTrainingRule : public BuiltinRule {
 public:
  static constexpr const char* kName = "StalledTrainingRule";
  static std::vector<ParamSpec> Specs() {
    return {{"threshold", ParamType::kDouble, "1800",
             "seconds without a new step before the training is declared stalled"},
            {"stop_training_on_fire", ParamType::kBool, "False",
             "ask for the training to be stopped when the rule fires"},
            {"training_job_name_prefix", ParamType::kString, "None",
             "SageMaker job prefix (accepted for compatibility; trainscope stops the job it "
             "runs)"}};
  }

  explicit StalledTrainingRule(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    threshold_us_ = static_cast<int64_t>(params().Double("threshold") * 1e6);
    stop_ = params().Bool("stop_training_on_fire");
  }

  Status Validate() const {
    if (!(params().Double("threshold") > 0)) {
      return Status::InvalidArgument("StalledTrainingRule: threshold must be > 0 seconds");
    }
    return Status::OK();
  }

  Status OnBind() override {
    last_progress_us_ = data().NowMicros();
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    last_progress_us_ = data().NowMicros();
    last_step_ = step;
    fired_ = false;
    return Verdict::NotMet();
  }

  Result<Verdict> OnTick(int64_t now_micros) override {
    Verdict v;
    const int64_t idle = now_micros - last_progress_us_;
    if (fired_ || idle <= threshold_us_) return v;
    if (data().trial().training_ended()) return v;
    fired_ = true;  // once per stall; a new step re-arms the rule
    RuleFinding f = NewFinding(last_step_);
    f.value = static_cast<double>(idle) / 1e6;
    f.threshold = static_cast<double>(threshold_us_) / 1e6;
    f.condition = "seconds since the last new step > threshold";
    f.explanation = "no new step was written for " + Num(idle / 1e6) + " s (threshold " +
                    Num(threshold_us_ / 1e6) + " s)" +
                    (last_step_ >= 0 ? "; the last step was " + std::to_string(last_step_)
                                     : "; no step was written at all") +
                    ": the training is stalled or hung";
    f.recommendation =
        "look at the training process: a deadlock in data loading (DataLoader workers, a full "
        "queue), a hung collective in distributed training (set NCCL_DEBUG=INFO and a "
        "timeout), waiting on I/O or a crashed worker; py-spy dump --pid <pid> shows where it "
        "is stuck";
    f.stop_training = stop_;
    v.Add(std::move(f));
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest r;
    r.name = "losses";
    r.save_interval = 1;
    return {r};
  }

 private:
  int64_t threshold_us_;
  bool stop_;
  int64_t last_progress_us_ = 0;
  int64_t last_step_ = -1;
  bool fired_ = false;
};

}  // namespace

BuiltinDef StalledTrainingRuleDef() {
  return MakeDef<StalledTrainingRule>("no new step was written for threshold seconds");
}

}  // namespace trainscope::rules_internal
