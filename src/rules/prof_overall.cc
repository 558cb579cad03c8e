// OverallSystemUsage and OverallFrameworkMetrics (docs/rules/OverallSystemUsage.md,
// docs/rules/OverallFrameworkMetrics.md): summaries that never fire. Their final status message
// holds the summary: per node percentiles of CPU, memory, I/O wait, GPU and GPU memory use; time
// per framework phase.
#include <array>
#include <cmath>
#include <map>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

// Percentiles of a value in [0, 100] from 1001 bins of 0.1 (bounded, exact to 0.1).
class PercentHist {
 public:
  void Add(double v) {
    const int i = static_cast<int>(std::lround(std::clamp(v, 0.0, 100.0) * 10.0));
    ++bins_[static_cast<size_t>(i)];
    ++n_;
    max_ = std::max(max_, v);
  }
  int64_t n() const { return n_; }
  double Quantile(double p) const {
    const int64_t want = static_cast<int64_t>(p / 100.0 * static_cast<double>(n_ - 1));
    int64_t seen = 0;
    for (size_t i = 0; i < bins_.size(); ++i) {
      seen += bins_[i];
      if (seen > want) return static_cast<double>(i) / 10.0;
    }
    return 100.0;
  }
  std::string Text(const std::string& label) const {
    if (n_ == 0) return {};
    return label + " p50 " + Num(Quantile(50)) + "% p95 " + Num(Quantile(95)) + "% p99 " +
           Num(Quantile(99)) + "% max " + Num(max_) + "%";
  }

 private:
  std::array<int64_t, 1001> bins_{};
  int64_t n_ = 0;
  double max_ = 0;
};

class OverallSystemUsage : public ProfilerRule {
 public:
  static constexpr const char* kName = "OverallSystemUsage";
  static std::vector<ParamSpec> Specs() { return {ScanIntervalSpec()}; }
  explicit OverallSystemUsage(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const { return Status::OK(); }

 protected:
  void OnDatapoint(const Datapoint& d, Verdict*) override {
    auto it = nodes_.find(d.node);
    if (it == nodes_.end()) {
      if (nodes_.size() >= 16) return;
      it = nodes_.emplace(d.node, std::make_unique<Node>()).first;
    }
    Node& n = *it->second;
    if (!d.cpu.empty() || d.cpu_total_percent) n.cpu.Add(d.MeanCpu());
    if (!d.iowait.empty()) {
      double s = 0;
      for (double x : d.iowait) s += x;
      n.io.Add(s / static_cast<double>(d.iowait.size()));
    }
    if (d.memory_percent) n.mem.Add(*d.memory_percent);
    for (const auto& [g, u] : d.gpu_util) {
      if (g < 16) n.gpu[static_cast<size_t>(g)].Add(u);
    }
    for (const auto& [g, u] : d.gpu_mem) {
      if (g < 16) n.gpu_mem[static_cast<size_t>(g)].Add(u);
    }
    if (d.process_rss_bytes) n.rss_max = std::max(n.rss_max, *d.process_rss_bytes);
  }

  std::string Summary() const override {
    std::string out;
    for (const auto& [node, n] : nodes_) {
      std::string s = node + ":";
      auto add = [&](const std::string& t) {
        if (!t.empty()) s += " " + t + ";";
      };
      add(n->cpu.Text("CPU"));
      add(n->mem.Text("memory"));
      add(n->io.Text("I/O wait"));
      for (size_t g = 0; g < n->gpu.size(); ++g) {
        add(n->gpu[g].Text("gpu" + std::to_string(g)));
        add(n->gpu_mem[g].Text("gpu" + std::to_string(g) + " memory"));
      }
      if (n->rss_max > 0)
        s += " training processes' memory max " + Num(n->rss_max / 1048576.0) + " MiB;";
      out += (out.empty() ? "" : " | ") + s;
    }
    return out.empty() ? "no system metrics were recorded" : out;
  }

  size_t OwnStateBytes() const override { return nodes_.size() * sizeof(Node); }

 private:
  struct Node {
    PercentHist cpu, mem, io;
    std::array<PercentHist, 16> gpu, gpu_mem;
    double rss_max = 0;
  };
  std::map<std::string, std::unique_ptr<Node>> nodes_;
};

class OverallFrameworkMetrics : public ProfilerRule {
 public:
  static constexpr const char* kName = "OverallFrameworkMetrics";
  static std::vector<ParamSpec> Specs() { return {ScanIntervalSpec()}; }
  explicit OverallFrameworkMetrics(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const { return Status::OK(); }

 protected:
  void OnFramework(const TimelineEvent& e, Verdict*) override {
    if (e.ph != 'X') return;
    auto it = phases_.find(e.phase);
    if (it == phases_.end()) {
      if (phases_.size() >= 256) return;
      it = phases_.emplace(e.phase, Total{.model = IsModelPhase(e)}).first;
    }
    ++it->second.count;
    it->second.us += e.dur_us;
    // A step whose Forward/Backward/Optimizer spans were not kept (the hook's
    // PhaseMinIntervalInMilliseconds: "phases": false) is left out of the time those phases are
    // a share of; the spans recorded on every step (DataLoaderIter) are a share of all steps.
    if (IsStepEvent(e)) {
      step_us_ += e.dur_us;
      if (PhasesKept(e)) phased_step_us_ += e.dur_us;
    }
  }

  std::string Summary() const override {
    std::vector<std::pair<std::string, Total>> sorted(phases_.begin(), phases_.end());
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
    std::string out;
    for (size_t i = 0; i < sorted.size() && i < 12; ++i) {
      const auto& [p, t] = sorted[i];
      out += (out.empty() ? "" : "; ") + p + " " + std::to_string(t.count) + " events " +
             Num(t.us / 1e6) + " s";
      const int64_t step_us = t.model ? phased_step_us_ : step_us_;
      if (step_us > 0 && p.rfind("Step:", 0) != 0) {
        out += " (" + Percent(static_cast<double>(t.us) / static_cast<double>(step_us)) +
               " of step time)";
      }
    }
    return out.empty() ? "no framework events were recorded" : out;
  }

  size_t OwnStateBytes() const override { return phases_.size() * (sizeof(Total) + 64); }

 private:
  struct Total {
    int64_t count = 0, us = 0;
    bool model = false;  // the model's own spans (IsModelPhase)
  };
  std::map<std::string, Total> phases_;
  int64_t step_us_ = 0;         // time of all steps
  int64_t phased_step_us_ = 0;  // time of the steps whose phases were recorded
};

}  // namespace

BuiltinDef OverallSystemUsageDef() {
  return MakeDef<OverallSystemUsage>(
      "never fires: percentiles of CPU, memory, I/O wait and GPU use per node (in its status)");
}
BuiltinDef OverallFrameworkMetricsDef() {
  return MakeDef<OverallFrameworkMetrics>(
      "never fires: time spent per framework phase (step, forward, backward, data loading)");
}

}  // namespace trainscope::rules_internal
