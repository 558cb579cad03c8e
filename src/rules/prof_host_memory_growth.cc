// HostMemoryGrowth (docs/rules/HostMemoryGrowth.md; SageMaker has no such rule): the resident
// memory of the training's process tree grows steadily: after `warmup_seconds`, over the later
// half of the samples so far, a
// straight line fits it well (R^2 >= min_r2) and rises by at least min_increase_mb and
// min_increase_percent. That is a leak in the training loop (tensors kept in a list, a growing
// cache), which ends in the out-of-memory killer.
//
// Memory: the series is kept as at most 128 buckets of equal numbers of samples; when full,
// neighbours merge (the bucket size doubles), so the whole run is covered in bounded space.
#include <cmath>
#include <map>
#include <vector>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

constexpr size_t kMaxBuckets = 128;

class HostMemoryGrowth : public ProfilerRule {
 public:
  static constexpr const char* kName = "HostMemoryGrowth";
  static std::vector<ParamSpec> Specs() {
    return {{"min_increase_mb", ParamType::kDouble, "200",
             "growth (MiB) of the training processes' resident memory over the later half of "
             "the run that counts as a leak"},
            {"min_increase_percent", ParamType::kDouble, "10",
             "the same growth relative to the memory at the start of that half (%)"},
            {"min_r2", ParamType::kDouble, "0.8",
             "how steady the growth must be: R^2 of a straight-line fit (0..1)"},
            {"warmup_seconds", ParamType::kDouble, "60",
             "seconds from the start of the data that are not judged (imports, model set-up, "
             "DataLoader workers starting)"},
            {"patience", ParamType::kInt, "20",
             "samples after the warm-up to see before the rule judges"}};
  }
  explicit HostMemoryGrowth(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const {
    const double r2 = params().Double("min_r2");
    if (!(r2 >= 0 && r2 <= 1)) {
      return Status::InvalidArgument("HostMemoryGrowth: min_r2 must be in [0, 1]");
    }
    if (params().Int("patience") < 3) {
      return Status::InvalidArgument("HostMemoryGrowth: patience must be >= 3 samples");
    }
    return Status::OK();
  }

 protected:
  void OnDatapoint(const Datapoint& d, Verdict*) override {
    if (!d.process_rss_bytes || *d.process_rss_bytes <= 0) return;  // 0: the tree has exited
    ++rss_seen_;
    if (static_cast<double>(d.ts_us - feed().first_us()) <
        params().Double("warmup_seconds") * 1e6) {
      return;
    }
    auto it = nodes_.find(d.node);
    if (it == nodes_.end()) {
      if (nodes_.size() >= 64) return;
      it = nodes_.emplace(d.node, Series{}).first;
    }
    Series& s = it->second;
    ++s.samples;
    if (s.buckets.empty() || s.buckets.back().n >= s.per_bucket) s.buckets.push_back({});
    Bucket& b = s.buckets.back();
    b.t += static_cast<double>(d.ts_us - feed().first_us()) / 1e6;
    b.v += *d.process_rss_bytes / 1048576.0;
    ++b.n;
    b.last_ts = d.ts_us;
    if (s.buckets.size() > kMaxBuckets) {
      std::vector<Bucket> merged;
      for (size_t i = 0; i + 1 < s.buckets.size(); i += 2) {
        Bucket m = s.buckets[i];
        m.t += s.buckets[i + 1].t;
        m.v += s.buckets[i + 1].v;
        m.n += s.buckets[i + 1].n;
        m.last_ts = s.buckets[i + 1].last_ts;
        merged.push_back(m);
      }
      if (s.buckets.size() % 2) merged.push_back(s.buckets.back());
      s.buckets = std::move(merged);
      s.per_bucket *= 2;
    }
  }

  void AfterBatch(Verdict* v) override {
    for (auto& [node, s] : nodes_) Judge(node, s, v);
  }
  void OnEnd(Verdict* v) override { AfterBatch(v); }

  std::string Summary() const override {
    if (nodes_.empty() && rss_seen_ > 0) {
      return "the run ended within the warm-up (warmup_seconds=" +
             Num(params().Double("warmup_seconds")) + "): " + std::to_string(rss_seen_) +
             " samples of the training processes' memory, none after it to judge";
    }
    if (nodes_.empty()) {
      return "no memory metrics of the training's processes were recorded (the system sampler "
             "runs on the process tree under `trainscope run`)";
    }
    std::string out;
    for (const auto& [node, s] : nodes_) {
      const Fit f = FitLaterHalf(s);
      out += (out.empty() ? "" : "; ") + node + ": the training processes' memory went from " +
             Num(f.start_mb) + " to " + Num(f.end_mb) + " MiB over the later half of the run (" +
             std::to_string(s.samples) + " samples, R^2 " + Num(f.r2) + ")";
    }
    return out;
  }

  size_t OwnStateBytes() const override {
    size_t b = 0;
    for (const auto& [k, s] : nodes_) b += k.capacity() + s.buckets.capacity() * sizeof(Bucket);
    return b;
  }

 private:
  int64_t rss_seen_ = 0;  // samples of the process tree's memory, warm-up included
  static constexpr int64_t kMinLeakSteps = 5;

  struct Bucket {
    double t = 0, v = 0;  // sums: seconds since the start of the data, MiB
    int64_t n = 0;
    int64_t last_ts = 0;
  };
  struct Series {
    std::vector<Bucket> buckets;
    int64_t per_bucket = 1;
    int64_t samples = 0;
    bool fired = false;
  };
  struct Fit {
    double slope = 0, r2 = 0, start_mb = 0, end_mb = 0, t0 = 0, t1 = 0;
    int64_t ts0 = 0, ts1 = 0;
    bool ok = false;
  };

  static Fit FitLaterHalf(const Series& s) {
    Fit f;
    const size_t n = s.buckets.size();
    if (n < 3) return f;
    const size_t first = n / 2 - (n >= 6 ? 0 : 1);  // at least 3 points
    const size_t m = n - first;
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    for (size_t i = first; i < n; ++i) {
      const double x = s.buckets[i].t / static_cast<double>(s.buckets[i].n);
      const double y = s.buckets[i].v / static_cast<double>(s.buckets[i].n);
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
      syy += y * y;
    }
    const double k = static_cast<double>(m);
    const double vx = sxx - sx * sx / k, vy = syy - sy * sy / k, cxy = sxy - sx * sy / k;
    if (vx <= 0) return f;
    f.slope = cxy / vx;
    f.r2 = vy > 0 ? (cxy * cxy) / (vx * vy) : 0.0;
    const double intercept = (sy - f.slope * sx) / k;
    f.t0 = s.buckets[first].t / static_cast<double>(s.buckets[first].n);
    f.t1 = s.buckets[n - 1].t / static_cast<double>(s.buckets[n - 1].n);
    f.start_mb = intercept + f.slope * f.t0;
    f.end_mb = intercept + f.slope * f.t1;
    f.ts0 = s.buckets[first].last_ts;
    f.ts1 = s.buckets[n - 1].last_ts;
    f.ok = true;
    return f;
  }

  void Judge(const std::string& node, Series& s, Verdict* v) {
    if (s.fired || s.samples < params().Int("patience")) return;
    const Fit f = FitLaterHalf(s);
    if (!f.ok) return;
    // A leak grows step after step. When the timeline tells the steps, the growth must span
    // kMinLeakSteps of them: memory that climbs within one or two long steps is those steps'
    // working set being built (an LSTM unrolled over 1,000 time steps grew 6 GiB during its
    // first two 40-second LBFGS steps, then stayed flat for 7 minutes). Steps are known up to
    // the last step event read, so a count that lags waits for more. Without step events (no
    // hook profiling, or a loop that never calls its registered module, as
    // tests/training/profiler_programs/memory_leak.py) the time alone is judged.
    if (StepInfoUntil() > 0) {
      const int64_t from = StepAt(f.ts0), to = StepAt(f.ts1);
      if (from < 0 || to - from < kMinLeakSteps) return;
    }
    const double growth = f.end_mb - f.start_mb;
    const double percent = f.start_mb > 0 ? 100.0 * growth / f.start_mb : 0.0;
    if (growth < params().Double("min_increase_mb") ||
        percent < params().Double("min_increase_percent") || f.r2 < params().Double("min_r2")) {
      return;
    }
    s.fired = true;
    RuleFinding f_out = NewProfilerFinding(f.ts1, node + "/process_tree");
    f_out.value = growth;
    f_out.threshold = params().Double("min_increase_mb");
    f_out.condition =
        "steady growth (R^2 >= min_r2) of the training processes' resident memory "
        ">= min_increase_mb and >= min_increase_percent over the later half of the run";
    const int64_t step0 = StepAt(f.ts0), step1 = StepAt(f.ts1);
    std::string per_step;
    if (step0 >= 0 && step1 > step0 && StepInfoUntil() >= f.ts1 - 2'000'000) {
      per_step = ", about " + Num(growth / static_cast<double>(step1 - step0)) +
                 " MiB per step from step " + std::to_string(step0) + " to " +
                 std::to_string(step1);
    }
    f_out.explanation = node + ": the training processes' resident memory grew steadily from " +
                        Num(f.start_mb) + " to " + Num(f.end_mb) + " MiB (+" + Num(growth) +
                        " MiB, " + Num(percent) + "%, " + Num(f.slope) + " MiB/s" + per_step +
                        ", R^2 " + Num(f.r2) + ") between " + Num(f.t0) + " s and " + When(f.ts1) +
                        ": memory leaks in the training loop";
    f_out.recommendation =
        "find what the loop keeps from step to step: losses or outputs appended to a list "
        "without .item()/.detach() (each keeps its graph), growing caches or dicts keyed by "
        "step, metrics accumulated as tensors, DataLoader workers touching a large Python "
        "dataset (copy-on-read: use numpy arrays); tracemalloc or memray show where it grows";
    v->Add(std::move(f_out));
  }

  std::map<std::string, Series> nodes_;
};

}  // namespace

BuiltinDef HostMemoryGrowthDef() {
  return MakeDef<HostMemoryGrowth>(
      "the training processes' resident memory grows steadily (a leak in the training loop)");
}

}  // namespace trainscope::rules_internal
