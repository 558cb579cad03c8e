// StepOutlier (docs/rules/StepOutlier.md): per node and step phase (Step:ModeKeys.TRAIN, ...),
// once more than 100 steps were seen, a step longer than mean + stddev x std of the durations so
// far (and at least min_ratio x the mean) is an outlier; the rule fires when more than n_outliers
// outliers were counted and their time beyond the mean is more than lost_time_threshold % of all
// the steps' time (a few slow steps in a long run cost nothing worth a finding).
#include <cmath>
#include <deque>
#include <map>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

constexpr int64_t kMinSteps = 100;

class StepOutlier : public ProfilerRule {
 public:
  static constexpr const char* kName = "StepOutlier";
  static std::vector<ParamSpec> Specs() {
    return {{"stddev", ParamType::kDouble, "3",
             "a step longer than mean + stddev x standard deviation is an outlier"},
            {"mode", ParamType::kString, "None",
             "TRAIN or EVAL: only those steps; None: every step phase"},
            {"n_outliers", ParamType::kInt, "10", "outliers tolerated before the rule fires"},
            {"min_ratio", ParamType::kDouble, "2",
             "trainscope: an outlier must also last at least this many times the mean step "
             "(1: smdebug's definition)"},
            {"lost_time_threshold", ParamType::kDouble, "5",
             "trainscope: the outliers must also have cost more than this % of the steps' time "
             "(their time beyond the mean step); 0: smdebug's count alone"},
            ScanIntervalSpec()};
  }
  explicit StepOutlier(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const {
    const std::string& m = params().String("mode");
    if (!m.empty() && m != "TRAIN" && m != "EVAL" && m != "PREDICT" && m != "GLOBAL") {
      return Status::InvalidArgument("StepOutlier: mode '" + m +
                                     "' is not one of TRAIN, EVAL, PREDICT, GLOBAL");
    }
    if (params().Double("lost_time_threshold") < 0 ||
        params().Double("lost_time_threshold") >= 100) {
      return Status::InvalidArgument("StepOutlier: lost_time_threshold must be in [0, 100)");
    }
    if (params().Int("n_outliers") < 0) {
      return Status::InvalidArgument("StepOutlier: n_outliers must be >= 0");
    }
    return Status::OK();
  }

 protected:
  void OnFramework(const TimelineEvent& e, Verdict* v) override {
    if (!IsStepEvent(e)) return;
    const std::string& mode = params().String("mode");
    if (!mode.empty() && e.phase.find(mode) == std::string::npos) return;
    const std::string key = e.node_id + "/" + e.phase;
    auto it = series_.find(key);
    if (it == series_.end()) {
      if (series_.size() >= 64) return;
      it = series_.emplace(key, Series{}).first;
    }
    Series& s = it->second;
    const double d = static_cast<double>(e.dur_us) / 1e6;
    ++s.n;  // Welford
    const double delta = d - s.mean;
    s.mean += delta / static_cast<double>(s.n);
    s.m2 += delta * (d - s.mean);
    if (s.n <= kMinSteps) return;
    const double std = std::sqrt(s.m2 / static_cast<double>(s.n));
    const double threshold = s.mean + params().Double("stddev") * std;
    if (d <= threshold || d < params().Double("min_ratio") * s.mean) return;
    ++s.outliers;
    s.lost += d - s.mean;
    s.recent.push_back(e.step.value_or(-1));
    if (s.recent.size() > 5) s.recent.pop_front();
    if (s.outliers <= params().Int("n_outliers") || s.fired) return;
    const double lost_percent = 100.0 * s.lost / (s.mean * static_cast<double>(s.n));
    if (lost_percent <= params().Double("lost_time_threshold")) return;
    s.fired = true;
    RuleFinding f = NewProfilerFindingAtStep(e.step.value_or(-1));
    f.tensor = key;
    f.value = d;
    f.threshold = threshold;
    f.condition =
        "more than n_outliers steps longer than mean + stddev x std and min_ratio x mean, costing "
        "more than lost_time_threshold% of the steps' time";
    std::string steps;
    for (int64_t st : s.recent) steps += (steps.empty() ? "" : ", ") + std::to_string(st);
    f.explanation = std::to_string(s.outliers) + " of " + std::to_string(s.n) + " " + e.phase +
                    " steps took longer than mean + " + Num(params().Double("stddev")) +
                    " std = " + Num(threshold) + " s (mean " + Num(s.mean) + " s); the last " +
                    Num(d) + " s at step " + std::to_string(e.step.value_or(-1)) +
                    " (recent outliers: steps " + steps + "); the stalls cost " +
                    Num(lost_percent) + "% of the training time (" + Num(s.lost) +
                    " s beyond the mean step): the training stalls now and then";
    f.recommendation =
        "look at what the slow steps do differently (trainscope timeline): periodic work in the "
        "loop (checkpoints, logging, evaluation), a data-loader batch that arrives late (raise "
        "num_workers/prefetch_factor), garbage collection, other jobs on the machine, or "
        "recompilation for new input shapes";
    v->Add(std::move(f));
  }

  std::string Summary() const override {
    std::string out;
    for (const auto& [key, s] : series_) {
      out +=
          (out.empty() ? "" : "; ") + key + ": " + std::to_string(s.n) + " steps, mean " +
          Num(s.mean) + " s, " + std::to_string(s.outliers) + " outliers (tolerated " +
          std::to_string(params().Int("n_outliers")) + ") costing " +
          Num(s.n > 0 && s.mean > 0 ? 100.0 * s.lost / (s.mean * static_cast<double>(s.n)) : 0.0) +
          "% of the steps' time (tolerated " + Num(params().Double("lost_time_threshold")) + "%)";
    }
    return out.empty() ? "no step events in the framework timeline" : out;
  }

  size_t OwnStateBytes() const override { return series_.size() * (sizeof(Series) + 128); }

 private:
  struct Series {
    int64_t n = 0;
    double mean = 0, m2 = 0;
    int64_t outliers = 0;
    double lost = 0;  // seconds of the outliers beyond the mean at the time
    std::deque<int64_t> recent;
    bool fired = false;
  };
  std::map<std::string, Series> series_;
};

}  // namespace

BuiltinDef StepOutlierDef() {
  return MakeDef<StepOutlier>(
      "more than n_outliers steps took longer than mean + stddev x std of the step durations");
}

}  // namespace trainscope::rules_internal
