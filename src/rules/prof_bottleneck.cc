// CPUBottleneck and IOBottleneck (docs/rules/CPUBottleneck.md, docs/rules/IOBottleneck.md): the
// share of system samples where the GPUs idle while the CPU is saturated (CPUBottleneck) or the
// CPU waits on I/O (IOBottleneck) exceeds `threshold` percent, once more than `patience` samples
// were seen.
#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

// smdebug resets its counters after this many datapoints.
constexpr int64_t kResetDatapoints = 1'000'000;

class BottleneckRule : public ProfilerRule {
 public:
  using ProfilerRule::ProfilerRule;

 protected:
  // Whether the sample counts (a sample without GPU metrics does not for CPUBottleneck).
  virtual bool Counts(const Datapoint& d) const = 0;
  virtual bool IsBottleneck(const Datapoint& d) const = 0;
  virtual void Describe(RuleFinding* f, double percent) const = 0;

  void OnDatapoint(const Datapoint& d, Verdict* v) override {
    if (!Counts(d)) return;
    if (total_ >= kResetDatapoints) total_ = bottlenecks_ = 0;
    ++total_;
    if (IsBottleneck(d)) {
      ++bottlenecks_;
      last_ts_ = d.ts_us;
      last_node_ = d.node;
    }
    if (total_ <= params().Int("patience")) return;
    const double percent = 100.0 * static_cast<double>(bottlenecks_) / static_cast<double>(total_);
    const double threshold = params().Double("threshold");
    if (percent <= threshold) {
      armed_ = true;
      return;
    }
    if (!armed_) return;
    armed_ = false;
    RuleFinding f = NewProfilerFinding(d.ts_us, last_node_);
    f.value = percent;
    f.threshold = threshold;
    Describe(&f, percent);
    v->Add(std::move(f));
  }

  std::string Summary() const override {
    if (total_ == 0) return {};
    return Num(100.0 * static_cast<double>(bottlenecks_) / static_cast<double>(total_)) + "% of " +
           std::to_string(total_) + " samples were bottlenecks (threshold " +
           Num(params().Double("threshold")) + "%)" + NotJudgedYet(total_, "samples");
  }

  std::string CountText() const {
    return std::to_string(bottlenecks_) + " of " + std::to_string(total_) + " samples";
  }
  std::string LastSeen() const { return "the last " + When(last_ts_); }

 private:
  int64_t total_ = 0, bottlenecks_ = 0, last_ts_ = 0;
  std::string last_node_;
  bool armed_ = true;
};

class CPUBottleneck : public BottleneckRule {
 public:
  static constexpr const char* kName = "CPUBottleneck";
  static std::vector<ParamSpec> Specs() {
    return {{"threshold", ParamType::kDouble, "50",
             "percent of samples that must be bottlenecks for the rule to fire"},
            {"gpu_threshold", ParamType::kDouble, "10", "a GPU below this utilization (%) idles"},
            {"cpu_threshold", ParamType::kDouble, "90",
             "a CPU core above this utilization (%) is saturated"},
            {"patience", ParamType::kInt, "1000", "samples to see before the rule judges"},
            ScanIntervalSpec()};
  }
  explicit CPUBottleneck(ParsedParams p) : BottleneckRule(kName, std::move(p)) {}
  Status Validate() const {
    if (params().Int("patience") < 0) {
      return Status::InvalidArgument("CPUBottleneck: patience must be >= 0");
    }
    return Status::OK();
  }

 protected:
  bool NeedsGpu() const override { return true; }
  bool Counts(const Datapoint& d) const override { return !d.gpu_util.empty(); }
  bool IsBottleneck(const Datapoint& d) const override {
    double min_gpu = 1e300;
    for (const auto& [i, u] : d.gpu_util) min_gpu = std::min(min_gpu, u);
    return min_gpu < params().Double("gpu_threshold") &&
           d.MaxCpu() > params().Double("cpu_threshold");
  }
  void Describe(RuleFinding* f, double percent) const override {
    f->condition =
        "percent of samples with a GPU < gpu_threshold and a CPU core > "
        "cpu_threshold > threshold";
    f->explanation = "in " + CountText() + " (" + Num(percent) + "%, threshold " +
                     Num(params().Double("threshold")) + "%) a GPU was below " +
                     Num(params().Double("gpu_threshold")) +
                     "% utilization while a CPU core was "
                     "above " +
                     Num(params().Double("cpu_threshold")) + "%, " + LastSeen() +
                     ": the GPUs wait for the CPU";
    f->recommendation =
        "move work off the CPU: raise DataLoader num_workers, do augmentation on the GPU (or "
        "pre-compute it), use pin_memory=True, avoid per-sample Python work in the loop; or use "
        "a machine with more CPU cores per GPU. If the busy core is the training loop's own "
        "(a small model launching many short kernels), give the GPU more work per launch: a "
        "larger batch, torch.compile (mode=\"reduce-overhead\" replays CUDA graphs)";
  }
};

class IOBottleneck : public BottleneckRule {
 public:
  static constexpr const char* kName = "IOBottleneck";
  static std::vector<ParamSpec> Specs() {
    return {{"threshold", ParamType::kDouble, "50",
             "percent of samples that must be bottlenecks for the rule to fire"},
            {"gpu_threshold", ParamType::kDouble, "10",
             "a GPU below this utilization (%) idles (ignored without GPU metrics)"},
            {"io_threshold", ParamType::kDouble, "50",
             "a CPU core above this I/O wait (%) waits on storage"},
            {"patience", ParamType::kInt, "1000", "samples to see before the rule judges"},
            ScanIntervalSpec()};
  }
  explicit IOBottleneck(ParsedParams p) : BottleneckRule(kName, std::move(p)) {}
  Status Validate() const {
    if (params().Int("patience") < 0) {
      return Status::InvalidArgument("IOBottleneck: patience must be >= 0");
    }
    return Status::OK();
  }

 protected:
  bool Counts(const Datapoint& d) const override { return !d.iowait.empty(); }
  bool IsBottleneck(const Datapoint& d) const override {
    if (d.MaxIowait() <= params().Double("io_threshold")) return false;
    if (d.gpu_util.empty()) return true;  // no GPU: the CPU itself waits on I/O
    double min_gpu = 1e300;
    for (const auto& [i, u] : d.gpu_util) min_gpu = std::min(min_gpu, u);
    return min_gpu < params().Double("gpu_threshold");
  }
  void Describe(RuleFinding* f, double percent) const override {
    const bool gpu = feed().saw_gpu();
    f->condition = gpu ? "percent of samples with a GPU < gpu_threshold and a core's I/O wait > "
                         "io_threshold > threshold"
                       : "percent of samples with a core's I/O wait > io_threshold > threshold";
    f->explanation =
        "in " + CountText() + " (" + Num(percent) + "%, threshold " +
        Num(params().Double("threshold")) + "%) a CPU core spent more than " +
        Num(params().Double("io_threshold")) + "% of its time waiting for I/O" +
        (gpu ? " while a GPU was below " + Num(params().Double("gpu_threshold")) + "% utilization"
             : "") +
        ", " + LastSeen() + ": the training waits on storage";
    f->recommendation =
        "read the data faster: copy the data set to local SSD or RAM (/dev/shm), use fewer, "
        "larger files (shards, WebDataset/TFRecord-style), raise DataLoader num_workers and "
        "prefetch_factor so reads overlap compute, and cache decoded samples";
  }
};

}  // namespace

BuiltinDef CPUBottleneckDef() {
  return MakeDef<CPUBottleneck>(
      "the GPUs idle while the CPU is saturated in more than threshold% of the samples");
}
BuiltinDef IOBottleneckDef() {
  return MakeDef<IOBottleneck>(
      "the CPU waits on I/O (while the GPUs idle) in more than threshold% of the samples");
}

}  // namespace trainscope::rules_internal
