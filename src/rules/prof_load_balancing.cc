// LoadBalancing (docs/rules/LoadBalancing.md): per node, the histograms of the GPUs' utilization
// (bins of 2 %) are compared pairwise; once both GPUs have more than `patience` values, a
// Jensen-Shannon distance (natural log, as scipy's default) above `threshold` means the work is
// not spread evenly.
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

constexpr int kBins = 50;

class LoadBalancing : public ProfilerRule {
 public:
  struct Hist {
    std::array<double, kBins> bins{};
    int64_t count = 0;
    int64_t last_ts = 0;
  };
  static constexpr const char* kName = "LoadBalancing";
  static std::vector<ParamSpec> Specs() {
    return {{"threshold", ParamType::kDouble, "0.5",
             "Jensen-Shannon distance between two GPUs' utilization histograms"},
            {"patience", ParamType::kInt, "1000", "values per GPU before the rule judges"},
            ScanIntervalSpec()};
  }
  explicit LoadBalancing(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const { return Status::OK(); }

 protected:
  bool NeedsGpu() const override { return true; }

  void OnDatapoint(const Datapoint& d, Verdict*) override {
    for (const auto& [gpu, util] : d.gpu_util) {
      auto& node = nodes_[d.node];
      if (node.size() >= 64 && !node.count(gpu)) continue;
      Hist& h = node[gpu];
      int bin = static_cast<int>(std::floor(std::clamp(util, 0.0, 100.0) / 2.0));
      h.bins[static_cast<size_t>(std::min(bin, kBins - 1))] += 1;
      ++h.count;
      h.last_ts = d.ts_us;
    }
  }

  static double JensenShannon(const Hist& a, const Hist& b) {
    double m_div_a = 0, m_div_b = 0;
    for (int i = 0; i < kBins; ++i) {
      const double p = a.bins[static_cast<size_t>(i)] / static_cast<double>(a.count);
      const double q = b.bins[static_cast<size_t>(i)] / static_cast<double>(b.count);
      const double m = (p + q) / 2;
      if (p > 0) m_div_a += p * std::log(p / m);
      if (q > 0) m_div_b += q * std::log(q / m);
    }
    return std::sqrt(std::max(0.0, (m_div_a + m_div_b) / 2));
  }

  void AfterBatch(Verdict* v) override {
    const int64_t patience = params().Int("patience");
    const double threshold = params().Double("threshold");
    for (auto& [node, gpus] : nodes_) {
      for (auto a = gpus.begin(); a != gpus.end(); ++a) {
        for (auto b = std::next(a); b != gpus.end(); ++b) {
          if (a->second.count <= patience || b->second.count <= patience) continue;
          const double js = JensenShannon(a->second, b->second);
          const std::string key =
              node + "/gpu" + std::to_string(a->first) + "-gpu" + std::to_string(b->first);
          const bool met = js > threshold;
          if (met && !fired_.count(key)) {
            fired_.insert(key);
            const int64_t ts = std::max(a->second.last_ts, b->second.last_ts);
            RuleFinding f = NewProfilerFinding(ts, key);
            f.value = js;
            f.threshold = threshold;
            f.condition =
                "Jensen-Shannon distance of the two GPUs' utilization histograms > "
                "threshold";
            f.explanation =
                node + ": GPU " + std::to_string(a->first) + " (mean " + Num(Mean(a->second)) +
                "%) and GPU " + std::to_string(b->first) + " (mean " + Num(Mean(b->second)) +
                "%) are used differently (Jensen-Shannon distance " + Num(js) + ", threshold " +
                Num(threshold) + "), " + When(ts) + ": the load is not balanced";
            f.recommendation =
                "spread the work evenly: use DistributedDataParallel (one process per GPU) "
                "rather than DataParallel, give every rank the same batch size and shard size, "
                "and check that no GPU does extra work (logging, evaluation, checkpoints)";
            v->Add(std::move(f));
          }
        }
      }
    }
  }

  std::string Summary() const override {
    for (const auto& [node, gpus] : nodes_) {
      if (gpus.size() >= 2) return {};
    }
    return "every node had at most one GPU: there is no load to balance";
  }

  size_t OwnStateBytes() const override {
    size_t b = 0;
    for (const auto& [k, g] : nodes_) b += k.capacity() + g.size() * sizeof(Hist);
    return b + fired_.size() * 64;
  }

 private:
  static double Mean(const Hist& h) {
    double s = 0;
    for (int i = 0; i < kBins; ++i) s += h.bins[static_cast<size_t>(i)] * (2.0 * i + 1.0);
    return h.count ? s / static_cast<double>(h.count) : 0.0;
  }
  std::map<std::string, std::map<int, Hist>> nodes_;
  std::set<std::string> fired_;
};

}  // namespace

BuiltinDef LoadBalancingDef() {
  return MakeDef<LoadBalancing>(
      "two GPUs of a node have utilization histograms farther apart than threshold (JS distance)");
}

}  // namespace trainscope::rules_internal
