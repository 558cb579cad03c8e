// StepOutlier (docs/rules/StepOutlier.md): per node and step phase (Step:ModeKeys.TRAIN, ...),
// once more than 100 steps were seen, a step longer than mean + stddev x std of the durations so
// far (and at least min_ratio x the mean) is an outlier; the rule fires when more than n_outliers
// outliers were counted and their time beyond the mean is more than lost_time_threshold % of all
// the steps' time (a few slow steps in a long run cost nothing worth a finding).
//
// Outliers while the training waited for a CPU (ProcessTreeCPUWaitPercent of the system sample
// that covers the outlier's end at least cpu_wait_threshold, and that wait at least half the
// outlier's time beyond the mean: other processes held the cores) are the machine's, not the
// training's: they are counted apart and do not fire. An outlier is judged
// once that sample has arrived (a sample without the metric: counted); a trial without system
// samples on the outlier's node counts it kNoSystemDataUs of data time later, one whose samples
// stopped kStaleSystemDataUs later, or at the end.
//
// Steps in which trainscope's hook saved tensors (their span has "saved": true) are left out:
// their extra time is the capture's (bench/run_cost.py measures it), and on this project's VM a
// few of the first 200 steps, which all save, stalled 2-5 ms on the file system and fired the
// rule on a healthy MLP.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

constexpr int64_t kMinSteps = 100;
constexpr int64_t kNoSystemDataUs = 5'000'000;
// Samples that stop coming (the sampler ended before the training): an outlier waits at most this
// long, in data time, for its sample, and is then counted.
constexpr int64_t kStaleSystemDataUs = 30'000'000;
constexpr size_t kMaxSamples = 2400;  // per node: 20 minutes at 500 ms

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
            {"cpu_wait_threshold", ParamType::kDouble, "10",
             "trainscope: an outlier whose system sample shows the training waiting for a CPU "
             "at least this % of the time is the machine's (other processes on the cores) and "
             "is not counted; 0: every outlier counts"},
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
  void OnDatapoint(const Datapoint& d, Verdict* /*v*/) override {
    auto& w = waits_[d.node];
    if (w.size() >= kMaxSamples) w.pop_front();
    w.emplace_back(d.ts_us, d.process_cpu_wait.value_or(-1));  // -1: no metric in this sample
  }

  void AfterBatch(Verdict* v) override {
    for (auto& [key, s] : series_) Resolve(s, false, v);
  }

  void OnEnd(Verdict* v) override {
    for (auto& [key, s] : series_) Resolve(s, true, v);
  }

  void OnFramework(const TimelineEvent& e, Verdict* v) override {
    if (!IsStepEvent(e)) return;
    // A step in which the debugger saved tensors ("saved": true, docs/formats/
    // framework_profiling.md) is partly trainscope's time (copies, new files; on a slow file
    // system a stall): it is not the training's, and neither in the statistics nor an outlier.
    if (const std::string* saved = e.Arg("saved"); saved != nullptr && *saved == "true") return;
    const std::string& mode = params().String("mode");
    if (!mode.empty() && e.phase.find(mode) == std::string::npos) return;
    const std::string key = e.node_id + "/" + e.phase;
    auto it = series_.find(key);
    if (it == series_.end()) {
      if (series_.size() >= 64) return;
      it = series_.emplace(key, Series{}).first;
      it->second.node = e.node_id;
      it->second.phase = e.phase;
    }
    Series& s = it->second;
    now_us_ = std::max(now_us_, e.end_us());
    const double d = static_cast<double>(e.dur_us) / 1e6;
    ++s.n;  // Welford
    const double delta = d - s.mean;
    s.mean += delta / static_cast<double>(s.n);
    s.m2 += delta * (d - s.mean);
    if (s.n <= kMinSteps) return;
    const double std = std::sqrt(s.m2 / static_cast<double>(s.n));
    const double threshold = s.mean + params().Double("stddev") * std;
    if (d <= threshold || d < params().Double("min_ratio") * s.mean) return;
    s.pending.push_back({e.end_us(), e.step.value_or(-1), d, d - s.mean, threshold});
    Resolve(s, false, v);
  }

 private:
  struct Outlier {
    int64_t end_us;
    int64_t step;
    double seconds, excess, threshold;
  };
  struct Series {
    std::string node, phase;  // the series is "<node>/<phase>"
    int64_t n = 0;
    double mean = 0, m2 = 0;
    int64_t outliers = 0;
    double lost = 0;  // seconds of the outliers beyond the mean at the time
    std::deque<int64_t> recent;
    std::deque<Outlier> pending;  // not judged yet: their system sample has not arrived
    int64_t contended = 0;        // outliers while the training waited for a CPU
    double contended_lost = 0;
    bool fired = false;
  };

  using Samples = std::deque<std::pair<int64_t, double>>;  // (sample time, wait % or -1)

  // Judges the pending outliers whose covering system sample is known (`end`: all of them).
  void Resolve(Series& s, bool end, Verdict* v) {
    // The timeline names its node by host ("ip-10-0-0-1"), the sampler by SageMaker's
    // "algo-<n>": the same name, else the only sampled node (one machine), else none.
    auto w = waits_.find(s.node);
    if (w == waits_.end() && waits_.size() == 1) w = waits_.begin();
    const Samples* samples = w != waits_.end() && !w->second.empty() ? &w->second : nullptr;
    while (!s.pending.empty()) {
      const std::optional<bool> contended = Contended(s.pending.front(), samples, end);
      if (!contended) break;  // its system sample has not arrived yet
      const Outlier o = s.pending.front();
      s.pending.pop_front();
      Count(s, o, *contended, v);
    }
  }

  // Whether waiting for a CPU explains outlier `o`: the covering sample (the first at or after
  // its end) shows the training waiting at least cpu_wait_threshold % of the sample's interval,
  // and at least half the outlier's time beyond the mean in all (a 0.5 s checkpoint on a busy
  // machine is still the training's). nullopt while that sample may still come.
  std::optional<bool> Contended(const Outlier& o, const Samples* samples, bool end) const {
    const double threshold = params().Double("cpu_wait_threshold");
    if (threshold <= 0) return false;
    auto not_yet = [&](int64_t patience_us) -> std::optional<bool> {
      if (!end && now_us_ - o.end_us < patience_us) return std::nullopt;
      return false;  // no sample will tell: the outlier counts
    };
    if (samples == nullptr) return not_yet(kNoSystemDataUs);
    const auto at = std::lower_bound(
        samples->begin(), samples->end(), o.end_us,
        [](const std::pair<int64_t, double>& x, int64_t t) { return x.first < t; });
    if (at == samples->end()) return not_yet(kStaleSystemDataUs);
    const double interval_s =
        at == samples->begin() ? 0.0 : static_cast<double>(at->first - (at - 1)->first) / 1e6;
    return at->second >= threshold &&
           (interval_s <= 0 || at->second / 100.0 * interval_s >= 0.5 * o.excess);
  }

  void Count(Series& s, const Outlier& o, bool contended, Verdict* v) {
    if (contended) {
      ++s.contended;
      s.contended_lost += o.excess;
      return;
    }
    ++s.outliers;
    s.lost += o.excess;
    s.recent.push_back(o.step);
    if (s.recent.size() > 5) s.recent.pop_front();
    if (s.outliers <= params().Int("n_outliers") || s.fired) return;
    const double lost_percent = 100.0 * s.lost / (s.mean * static_cast<double>(s.n));
    if (lost_percent <= params().Double("lost_time_threshold")) return;
    s.fired = true;
    const double d = o.seconds;
    const double threshold = o.threshold;
    RuleFinding f = NewProfilerFindingAtStep(o.step);
    f.tensor = s.node + "/" + s.phase;
    f.value = d;
    f.threshold = threshold;
    f.condition =
        "more than n_outliers steps longer than mean + stddev x std and min_ratio x mean, costing "
        "more than lost_time_threshold% of the steps' time";
    std::string steps;
    for (int64_t st : s.recent) steps += (steps.empty() ? "" : ", ") + std::to_string(st);
    f.explanation = std::to_string(s.outliers) + " of " + std::to_string(s.n) + " " + s.phase +
                    " steps took longer than mean + " + Num(params().Double("stddev")) +
                    " std = " + Num(threshold) + " s (mean " + Num(s.mean) + " s); the last " +
                    Num(d) + " s at step " + std::to_string(o.step) + " (recent outliers: steps " +
                    steps + "); the stalls cost " + Num(lost_percent) + "% of the training time (" +
                    Num(s.lost) + " s beyond the mean step): the training stalls now and then" +
                    ContendedNote(s);
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
          "% of the steps' time (tolerated " + Num(params().Double("lost_time_threshold")) + "%)" +
          ContendedNote(s);
    }
    return out.empty() ? "no step events in the framework timeline" : out;
  }

  size_t OwnStateBytes() const override {
    size_t b = series_.size() * (sizeof(Series) + 128);
    for (const auto& [key, s] : series_) b += s.pending.size() * sizeof(Outlier);
    for (const auto& [node, w] : waits_) b += w.size() * sizeof(w.front()) + node.size();
    return b;
  }

  // "; N more outliers ... not counted" when some were the machine's.
  static std::string ContendedNote(const Series& s) {
    if (s.contended == 0) return {};
    return "; " + std::to_string(s.contended) + " more outliers (" + Num(s.contended_lost) +
           " s beyond the mean) came while the training waited for a CPU (other processes on "
           "its cores): the machine's, not counted";
  }

  std::map<std::string, Series> series_;
  // node -> (sample time, ProcessTreeCPUWaitPercent or -1), in time order
  std::map<std::string, Samples> waits_;
  int64_t now_us_ = 0;  // the latest framework event's end (data time)
};

}  // namespace

BuiltinDef StepOutlierDef() {
  return MakeDef<StepOutlier>(
      "more than n_outliers steps took longer than mean + stddev x std of the step durations");
}

}  // namespace trainscope::rules_internal
