// BatchSize (docs/rules/BatchSize.md): per node, once more than `patience` and more than `window`
// samples were seen, the 95th percentile of the node's CPU utilization is below
// cpu_threshold_p95 and, for a GPU, the 95th percentiles of its utilization and of its memory
// use are below gpu_threshold_p95 and gpu_memory_threshold_p95: every resource idles, the batch
// is too small.
#include <map>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

class BatchSize : public ProfilerRule {
 public:
  static constexpr const char* kName = "BatchSize";
  static std::vector<ParamSpec> Specs() {
    return {{"cpu_threshold_p95", ParamType::kDouble, "70",
             "node CPU utilization (%, mean over cores) whose p95 counts as low"},
            {"gpu_threshold_p95", ParamType::kDouble, "70", "GPU utilization (%) p95 that is low"},
            {"gpu_memory_threshold_p95", ParamType::kDouble, "70",
             "GPU memory use (%) p95 that is low"},
            {"patience", ParamType::kInt, "1000", "samples to see before the rule judges"},
            {"window", ParamType::kInt, "500", "samples the percentiles are taken over"},
            ScanIntervalSpec()};
  }
  explicit BatchSize(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const {
    if (params().Int("window") < 1)
      return Status::InvalidArgument("BatchSize: window must be >= 1");
    return Status::OK();
  }

 protected:
  bool NeedsGpu() const override { return true; }

  void OnDatapoint(const Datapoint& d, Verdict*) override {
    if (!d.has_gpu()) return;
    const size_t w = static_cast<size_t>(params().Int("window"));
    auto it = nodes_.find(d.node);
    if (it == nodes_.end()) {
      if (nodes_.size() >= 64) return;
      it = nodes_.emplace(d.node, Node(w)).first;
    }
    Node& n = it->second;
    n.cpu.Add(d.MeanCpu());
    ++n.count;
    n.last_ts = d.ts_us;
    for (const auto& [gpu, util] : d.gpu_util) {
      if (n.gpus.size() >= 64 && !n.gpus.count(gpu)) continue;
      auto g = n.gpus.try_emplace(gpu, w).first;
      g->second.util.Add(util);
      auto m = d.gpu_mem.find(gpu);
      if (m != d.gpu_mem.end()) g->second.mem.Add(m->second);
    }
  }

  void AfterBatch(Verdict* v) override {
    const int64_t patience = params().Int("patience"), window = params().Int("window");
    const double tc = params().Double("cpu_threshold_p95"),
                 tg = params().Double("gpu_threshold_p95"),
                 tm = params().Double("gpu_memory_threshold_p95");
    for (auto& [node, n] : nodes_) {
      if (n.count <= patience || n.count <= window) continue;
      const double cpu95 = Percentile(n.cpu.Values(), 95);
      for (auto& [gpu, g] : n.gpus) {
        const double u95 = Percentile(g.util.Values(), 95);
        const double m95 = g.mem.size() ? Percentile(g.mem.Values(), 95) : 0.0;
        const bool small = cpu95 < tc && u95 < tg && m95 < tm;
        if (small && g.armed) {
          const std::string key = node + "/gpu" + std::to_string(gpu);
          RuleFinding f = NewProfilerFinding(n.last_ts, key);
          f.value = u95;
          f.threshold = tg;
          f.condition =
              "p95(node CPU) < cpu_threshold_p95 and p95(GPU utilization) < "
              "gpu_threshold_p95 and p95(GPU memory) < gpu_memory_threshold_p95";
          f.explanation = key + ": p95 of GPU utilization " + Num(u95) + "% (threshold " + Num(tg) +
                          "%), of GPU memory " + Num(m95) + "% (threshold " + Num(tm) +
                          "%) and of the node's CPU " + Num(cpu95) + "% (threshold " + Num(tc) +
                          "%), " + When(n.last_ts) +
                          ": every resource idles, the batch is too "
                          "small";
          f.recommendation =
              "raise the batch size (the GPU memory has room; scale the learning rate with it, "
              "or use gradient accumulation to keep the effective batch), or use a smaller "
              "instance";
          v->Add(std::move(f));
        }
        g.armed = !small;
      }
    }
  }

  size_t OwnStateBytes() const override {
    size_t b = 0;
    for (const auto& [k, n] : nodes_) {
      b += k.capacity() + n.cpu.bytes() + sizeof(Node);
      for (const auto& [i, g] : n.gpus) b += g.util.bytes() + g.mem.bytes() + sizeof(Gpu);
    }
    return b;
  }

 private:
  struct Gpu {
    explicit Gpu(size_t w) : util(w), mem(w) {}
    Window util, mem;
    bool armed = true;
  };
  struct Node {
    explicit Node(size_t w) : cpu(w) {}
    Window cpu;
    std::map<int, Gpu> gpus;
    int64_t count = 0, last_ts = 0;
  };
  std::map<std::string, Node> nodes_;
};

}  // namespace

BuiltinDef BatchSizeDef() {
  return MakeDef<BatchSize>(
      "CPU, GPU utilization and GPU memory p95 all below their thresholds: the batch is too small");
}

}  // namespace trainscope::rules_internal
