// StepOutlier (docs/rules/StepOutlier.md): per node and step phase (Step:ModeKeys.TRAIN, ...),
// once more than 100 steps were seen, a step longer than mean + stddev x std of the last
// kWindow steps' durations (and at least min_ratio x their mean) is a candidate; it is an outlier
// when the kFollowers steps after it are not as slow (their median within its threshold): a stall
// is a slow step among quick ones, a run of slow steps is a change of pace (larger inputs, a
// curriculum, a policy that learned to keep its episodes going), not counted. The rule fires when
// more than n_outliers outliers were counted and their time beyond the mean is more than
// lost_time_threshold % of all the steps' time (a few slow steps in a long run cost nothing worth
// a finding).
//
// A step whose span says the watched model was called N >= 2 times in it ("model_calls", a
// reinforcement-learning step that rolls out an episode: one policy call per action) is judged
// by its time per model call: its time grows with its episode, not with a stall.
//
// Outliers while the training waited for a CPU (ProcessTreeCPUWaitPercent of the system sample
// that covers the outlier's end at least cpu_wait_threshold, and that wait at least half the
// outlier's time beyond the mean: other processes held the cores) are the machine's, not the
// training's: they are counted apart and do not fire. An outlier is judged
// once that sample has arrived (a sample without the metric: counted); a trial without system
// samples on the outlier's node counts it kNoSystemDataUs of data time later, one whose samples
// stopped kStaleSystemDataUs later, or at the end.
//
// Steps in which trainscope's hook copied or reduced 64 KiB or more of tensors (their span has
// "saved": true) are left out: their extra time is the capture's (bench/run_cost.py measures
// it), and on this project's VM a few of the first 200 steps, which all save, stalled 2-5 ms on
// the file system and fired the rule on a healthy MLP. A step that saved only its loss is judged
// (the default rules save it at every step).
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

constexpr int64_t kMinSteps = 100;
// The statistics cover the last kWindow steps: the step time a training has now, not its mean
// since the start (a training whose steps lengthen, by a curriculum or longer episodes, would
// otherwise have its late steps judged against its early ones).
constexpr size_t kWindow = 1000;
// A candidate is judged once this many steps of its series followed it.
constexpr size_t kFollowers = 5;
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
    for (auto& [key, s] : series_) {
      while (!s.candidates.empty()) JudgeCandidate(s, v);  // with the followers there are
      Resolve(s, true, v);
    }
  }

  void OnFramework(const TimelineEvent& e, Verdict* v) override {
    if (!IsStepEvent(e)) return;
    // A step in which the debugger saved tensors ("saved": true, docs/formats/
    // framework_profiling.md) is partly trainscope's time (copies, new files; on a slow file
    // system a stall): it is not the training's, and neither in the statistics nor an outlier.
    if (const std::string* saved = e.Arg("saved"); saved != nullptr && *saved == "true") {
      ++saved_steps_;
      return;
    }
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
    const double seconds = static_cast<double>(e.dur_us) / 1e6;
    int64_t calls = 1;
    if (const std::string* c = e.Arg("model_calls"); c != nullptr) {
      calls = std::max<int64_t>(1, std::strtoll(c->c_str(), nullptr, 10));
      if (calls >= 2) s.per_call = true;
    }
    const double d = seconds / static_cast<double>(calls);  // the time judged: per model call
    ++s.n;
    s.window.push_back(d);
    s.sum += d;
    s.sum2 += d * d;
    if (s.window.size() > kWindow) {
      s.sum -= s.window.front();
      s.sum2 -= s.window.front() * s.window.front();
      s.window.pop_front();
    }
    if (++s.since_exact >= kWindow) {  // the running sums, summed afresh: no drift
      s.since_exact = 0;
      s.sum = s.sum2 = 0;
      for (double x : s.window) {
        s.sum += x;
        s.sum2 += x * x;
      }
    }
    // The candidates whose last follower this is are judged (their followers: the window's tail).
    while (!s.candidates.empty() && s.n - s.candidates.front().index >= int64_t{kFollowers}) {
      JudgeCandidate(s, v);
    }
    s.total += d;
    if (s.n <= kMinSteps) return;
    const double k = static_cast<double>(s.window.size());
    const double mean = s.sum / k;
    const double std = std::sqrt(std::max(0.0, s.sum2 / k - mean * mean));
    const double threshold = mean + params().Double("stddev") * std;
    if (d <= threshold || d < params().Double("min_ratio") * mean) return;
    s.candidates.push_back(
        {Outlier{e.end_us(), e.step.value_or(-1), d, seconds, calls, d - mean, threshold}, s.n});
  }

 private:
  struct Outlier {
    int64_t end_us;
    int64_t step;
    double value;    // the time judged: seconds per model call
    double seconds;  // the step's time
    int64_t calls;   // the model's calls in the step (1: not recorded)
    double excess;   // value beyond the window's mean
    double threshold;
  };
  struct Candidate {
    Outlier o;
    int64_t index;  // the series' step count with it (its followers are index + 1, ...)
  };
  struct Series {
    std::string node, phase;  // the series is "<node>/<phase>"
    int64_t n = 0;
    double total = 0;                  // all steps' values
    std::deque<double> window;         // the last kWindow values
    double sum = 0, sum2 = 0;          // over the window
    size_t since_exact = 0;            // values since the sums were summed afresh
    std::deque<Candidate> candidates;  // waiting for their followers
    bool per_call = false;             // some step called the model 2+ times
    int64_t changed_pace = 0;          // candidates whose followers were as slow
    int64_t outliers = 0;
    double lost = 0;  // seconds of the outliers beyond the mean at the time
    std::deque<int64_t> recent;
    std::deque<Outlier> pending;  // not judged yet: their system sample has not arrived
    int64_t contended = 0;        // outliers while the training waited for a CPU
    double contended_lost = 0;
    bool fired = false;
  };

  using Samples = std::deque<std::pair<int64_t, double>>;  // (sample time, wait % or -1)

  // The oldest candidate, by the steps after it (s.window ends with them; fewer than
  // kFollowers at the end of the data, none: an outlier as smdebug counts it): an outlier when
  // their median is within its threshold, a change of pace when it is not.
  void JudgeCandidate(Series& s, Verdict* v) {
    const Candidate c = s.candidates.front();
    s.candidates.pop_front();
    const auto after = static_cast<ptrdiff_t>(
        std::min<int64_t>(s.n - c.index, static_cast<int64_t>(s.window.size())));
    std::vector<double> next(s.window.end() - after, s.window.end());
    if (!next.empty()) {
      std::nth_element(next.begin(), next.begin() + static_cast<ptrdiff_t>(next.size() / 2),
                       next.end());
      if (next[next.size() / 2] > c.o.threshold) {
        ++s.changed_pace;
        return;
      }
    }
    s.pending.push_back(c.o);
    Resolve(s, false, v);
  }

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
    const double lost_percent = LostPercent(s);
    if (lost_percent <= params().Double("lost_time_threshold")) return;
    s.fired = true;
    RuleFinding f = NewProfilerFindingAtStep(o.step);
    f.tensor = s.node + "/" + s.phase;
    f.value = o.value;
    f.threshold = o.threshold;
    f.condition =
        "more than n_outliers steps longer than mean + stddev x std and min_ratio x mean of the "
        "recent steps (per model call when the step called the model several times), quick "
        "steps after each, costing more than lost_time_threshold% of the steps' time";
    std::string steps;
    for (int64_t st : s.recent) steps += (steps.empty() ? "" : ", ") + std::to_string(st);
    const std::string unit = s.per_call ? " s per model call" : " s";
    f.explanation = std::to_string(s.outliers) + " of " + std::to_string(s.n) + " " + s.phase +
                    " steps took longer than mean + " + Num(params().Double("stddev")) +
                    " std = " + Num(o.threshold) + unit + " (mean " + Num(o.value - o.excess) +
                    unit + " over the last " + std::to_string(s.window.size()) +
                    " steps), the steps after each quick again; the last " + Num(o.seconds) +
                    " s at step " + std::to_string(o.step) +
                    (o.calls >= 2 ? " (" + std::to_string(o.calls) + " model calls, " +
                                        Num(o.value) + unit + ")"
                                  : std::string()) +
                    " (recent outliers: steps " + steps + "); the stalls cost " +
                    Num(lost_percent) + "% of the training time (" + Num(s.lost) + unit +
                    " beyond the mean step): the training stalls now and then" + ContendedNote(s);
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
      const double mean = s.window.empty() ? 0.0 : s.sum / static_cast<double>(s.window.size());
      out += (out.empty() ? "" : "; ") + key + ": " + std::to_string(s.n) + " steps, mean " +
             Num(mean) + (s.per_call ? " s per model call" : " s") + " (last " +
             std::to_string(s.window.size()) + "), " + std::to_string(s.outliers) +
             " outliers (tolerated " + std::to_string(params().Int("n_outliers")) + ") costing " +
             Num(LostPercent(s)) + "% of the steps' time (tolerated " +
             Num(params().Double("lost_time_threshold")) + "%)" + ContendedNote(s);
      if (s.changed_pace > 0) {
        out += "; " + std::to_string(s.changed_pace) +
               " slow steps were followed by steps as slow (the pace changed: longer inputs or "
               "episodes), not counted";
      }
    }
    if (out.empty() && saved_steps_ > 0) {
      return "no step judged: each of the " + std::to_string(saved_steps_) +
             " step events was a step in which the debugger copied or reduced 64 KiB or more of "
             "tensors (\"saved\": true, its time partly the capture's); save fewer tensors "
             "at every step (a larger save_interval) to have the steps judged";
    }
    return out.empty() ? "no step events in the framework timeline" : out;
  }

  static double LostPercent(const Series& s) {
    return s.total > 0 ? 100.0 * s.lost / s.total : 0.0;
  }

  size_t OwnStateBytes() const override {
    size_t b = series_.size() * (sizeof(Series) + 128);
    for (const auto& [key, s] : series_) {
      b += s.pending.size() * sizeof(Outlier) + s.candidates.size() * sizeof(Candidate) +
           s.window.size() * sizeof(double);
    }
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
  int64_t now_us_ = 0;       // the latest framework event's end (data time)
  int64_t saved_steps_ = 0;  // step events left out: the capture's work in them
};

}  // namespace

BuiltinDef StepOutlierDef() {
  return MakeDef<StepOutlier>(
      "more than n_outliers steps took longer than mean + stddev x std of the step durations");
}

}  // namespace trainscope::rules_internal
