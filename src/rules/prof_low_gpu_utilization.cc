// LowGPUUtilization (docs/rules/LowGPUUtilization.md): per GPU, once more than `patience` values
// were seen, the 95th percentile of the last `window` utilization values is below threshold_p95
// (the GPU is under-used), or above it while the 5th percentile is below threshold_p5 (the
// utilization swings: the GPU idles between bursts).
#include <map>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

class LowGPUUtilization : public ProfilerRule {
 public:
  static constexpr const char* kName = "LowGPUUtilization";
  static std::vector<ParamSpec> Specs() {
    return {{"threshold_p95", ParamType::kDouble, "70",
             "a GPU whose 95th-percentile utilization (%) is below this is under-used"},
            {"threshold_p5", ParamType::kDouble, "10",
             "with p95 above threshold_p95, a 5th percentile below this means swinging use"},
            {"window", ParamType::kInt, "500", "utilization values the percentiles are taken over"},
            {"patience", ParamType::kInt, "1000", "values to see before the rule judges"},
            ScanIntervalSpec()};
  }
  explicit LowGPUUtilization(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const {
    if (params().Int("window") < 1) {
      return Status::InvalidArgument("LowGPUUtilization: window must be >= 1");
    }
    return Status::OK();
  }

 protected:
  bool NeedsGpu() const override { return true; }

  void OnDatapoint(const Datapoint& d, Verdict*) override {
    for (const auto& [gpu, util] : d.gpu_util) {
      const std::string key = d.node + "/gpu" + std::to_string(gpu);
      auto it = series_.find(key);
      if (it == series_.end()) {
        if (series_.size() >= 256) continue;
        it = series_.emplace(key, Series(static_cast<size_t>(params().Int("window")))).first;
      }
      it->second.window.Add(util);
      ++it->second.count;
      it->second.last_ts = d.ts_us;
    }
  }

  void AfterBatch(Verdict* v) override {
    const double t95 = params().Double("threshold_p95"), t5 = params().Double("threshold_p5");
    for (auto& [key, s] : series_) {
      if (s.count <= params().Int("patience")) continue;
      const std::vector<double> values = s.window.Values();
      const double p95 = Percentile(values, 95), p5 = Percentile(values, 5);
      const bool low = p95<t95, swings = p95> t95 && p5 < t5;
      if (low && s.armed_low) {
        RuleFinding f = NewProfilerFinding(s.last_ts, key);
        f.value = p95;
        f.threshold = t95;
        f.condition = "p95(GPU utilization over window) < threshold_p95";
        f.explanation = key + ": 95% of the last " + std::to_string(values.size()) +
                        " utilization values were below " + Num(p95) + "% (threshold " + Num(t95) +
                        "%), " + When(s.last_ts) + ": the GPU is under-used";
        f.recommendation =
            "give the GPU more work per step: raise the batch size (and scale the learning "
            "rate), use mixed precision; if the data pipeline is slow, raise DataLoader "
            "num_workers; or use a smaller (cheaper) GPU";
        v->Add(std::move(f));
      }
      if (swings && s.armed_swing) {
        RuleFinding f = NewProfilerFinding(s.last_ts, key);
        f.value = p5;
        f.threshold = t5;
        f.condition = "p95 > threshold_p95 and p5(GPU utilization over window) < threshold_p5";
        f.explanation = key + ": utilization swings between " + Num(p5) + "% (p5, threshold " +
                        Num(t5) + "%) and " + Num(p95) + "% (p95), " + When(s.last_ts) +
                        ": the GPU idles between bursts of work";
        f.recommendation =
            "the GPU waits between steps: look for data-loading stalls (raise num_workers, "
            "prefetch), host-device copies (pin_memory=True, non_blocking=True), synchronising "
            "calls (.item(), .cpu(), printing tensors) and checkpoints inside the loop";
        v->Add(std::move(f));
      }
      s.armed_low = !low;
      s.armed_swing = !swings;
    }
  }

  std::string Summary() const override {
    std::string s;
    for (const auto& [key, ser] : series_) {
      const std::vector<double> values = ser.window.Values();
      s += (s.empty() ? "" : "; ") + key + " p95 " + Num(Percentile(values, 95)) + "% p5 " +
           Num(Percentile(values, 5)) + "% over the last " + std::to_string(values.size()) +
           " values";
      // A run shorter than `patience` values is not judged: say so, or a low p95 above reads as
      // judged healthy.
      s += NotJudgedYet(ser.count, "values");
    }
    return s;
  }

  size_t OwnStateBytes() const override {
    size_t b = 0;
    for (const auto& [k, s] : series_) b += k.capacity() + s.window.bytes() + sizeof(Series);
    return b;
  }

 private:
  struct Series {
    explicit Series(size_t w) : window(w) {}
    Window window;
    int64_t count = 0;
    int64_t last_ts = 0;
    bool armed_low = true, armed_swing = true;
  };
  std::map<std::string, Series> series_;
};

}  // namespace

BuiltinDef LowGPUUtilizationDef() {
  return MakeDef<LowGPUUtilization>(
      "a GPU's p95 utilization is below threshold_p95, or it swings (p5 below threshold_p5)");
}

}  // namespace trainscope::rules_internal
