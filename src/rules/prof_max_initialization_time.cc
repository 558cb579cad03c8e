// MaxInitializationTime (docs/rules/MaxInitializationTime.md): the first training step did not
// start within `threshold` minutes of the start of the profiler's data.
#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

class MaxInitializationTime : public ProfilerRule {
 public:
  static constexpr const char* kName = "MaxInitializationTime";
  static std::vector<ParamSpec> Specs() {
    return {{"threshold", ParamType::kDouble, "20",
             "minutes the training may take before its first step"},
            ScanIntervalSpec()};
  }
  explicit MaxInitializationTime(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const {
    if (!(params().Double("threshold") > 0)) {
      return Status::InvalidArgument("MaxInitializationTime: threshold must be > 0 minutes");
    }
    return Status::OK();
  }

 protected:
  void OnFramework(const TimelineEvent& e, Verdict* v) override {
    if (!IsStepEvent(e) || first_step_us_ != 0) return;
    first_step_us_ = e.start_us;
    first_step_ = e.step.value_or(-1);
    Check(e.start_us, v);
  }

  void AfterBatch(Verdict* v) override {
    if (first_step_us_ == 0) Check(feed().last_us(), v);
  }
  void OnEnd(Verdict* v) override { AfterBatch(v); }

  std::string Summary() const override {
    if (first_step_us_ == 0) {
      return "no training step was recorded in the framework timeline (" +
             Num((feed().last_us() - feed().first_us()) / 6e7) + " minutes of data)";
    }
    return "the first step started " + Num((first_step_us_ - feed().first_us()) / 6e7) +
           " minutes after the start of the data (threshold " + Num(params().Double("threshold")) +
           ")";
  }

 private:
  void Check(int64_t now_us, Verdict* v) {
    if (fired_ || feed().first_us() == 0 || now_us <= 0) return;
    const double minutes = static_cast<double>(now_us - feed().first_us()) / 6e7;
    const double threshold = params().Double("threshold");
    if (minutes <= threshold) return;
    fired_ = true;
    RuleFinding f = NewProfilerFindingAtStep(first_step_us_ ? first_step_ : -1);
    f.value = minutes;
    f.threshold = threshold;
    f.condition = "minutes from the start of the data to the first training step > threshold";
    f.explanation = first_step_us_
                        ? "the first training step started " + Num(minutes) +
                              " minutes after the start of "
                              "the run (threshold " +
                              Num(threshold) + " minutes): initialization is slow"
                        : "no training step has started " + Num(minutes) +
                              " minutes after the start of the "
                              "run (threshold " +
                              Num(threshold) + " minutes): initialization is slow or stuck";
    f.recommendation =
        "find what the start-up waits for (py-spy dump --pid): downloading or unpacking the data "
        "set (stage it on local disk beforehand), building the data index (cache it), "
        "compiling (torch.compile warm-up), loading a large checkpoint, or a DataLoader whose "
        "workers take long to start (persistent_workers=True)";
    v->Add(std::move(f));
  }

  int64_t first_step_us_ = 0;
  int64_t first_step_ = -1;
  bool fired_ = false;
};

}  // namespace

BuiltinDef MaxInitializationTimeDef() {
  return MakeDef<MaxInitializationTime>(
      "the first training step did not start within threshold minutes");
}

}  // namespace trainscope::rules_internal
