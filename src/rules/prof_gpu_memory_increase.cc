// GPUMemoryIncrease (docs/rules/GPUMemoryIncrease.md): per GPU, once more than `patience` values
// were seen, the mean memory use (%) of the last `window` values exceeds the mean of the `window`
// values before by more than `increase` percentage points.
#include <map>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

class GPUMemoryIncrease : public ProfilerRule {
 public:
  static constexpr const char* kName = "GPUMemoryIncrease";
  static std::vector<ParamSpec> Specs() {
    return {{"increase", ParamType::kDouble, "5",
             "rise of the mean GPU memory use, in percentage points, between two windows"},
            {"patience", ParamType::kInt, "1000", "values to see before the rule judges"},
            {"window", ParamType::kInt, "10", "values per window"},
            ScanIntervalSpec()};
  }
  explicit GPUMemoryIncrease(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const {
    if (params().Int("window") < 1) {
      return Status::InvalidArgument("GPUMemoryIncrease: window must be >= 1");
    }
    return Status::OK();
  }

 protected:
  bool NeedsGpu() const override { return true; }

  void OnDatapoint(const Datapoint& d, Verdict* v) override {
    const size_t w = static_cast<size_t>(params().Int("window"));
    for (const auto& [gpu, mem] : d.gpu_mem) {
      const std::string key = d.node + "/gpu" + std::to_string(gpu);
      auto it = series_.find(key);
      if (it == series_.end()) {
        if (series_.size() >= 256) continue;
        it = series_.emplace(key, Series(2 * w)).first;
      }
      Series& s = it->second;
      if (s.count == 0) s.first = mem;
      s.values.Add(mem);
      ++s.count;
      if (s.count <= params().Int("patience") || !s.values.full()) continue;
      const std::vector<double> all = s.values.Values();
      double before = 0, last = 0;
      for (size_t i = 0; i < w; ++i) before += all[i];
      for (size_t i = w; i < 2 * w; ++i) last += all[i];
      before /= static_cast<double>(w);
      last /= static_cast<double>(w);
      const double rise = last - before, inc = params().Double("increase");
      const bool met = rise > inc;
      if (met && s.armed) {
        RuleFinding f = NewProfilerFinding(d.ts_us, key);
        f.value = rise;
        f.threshold = inc;
        f.condition = "mean(GPU memory %, last window) - mean(window before) > increase";
        f.explanation = key + ": GPU memory use rose from " + Num(before) + "% to " + Num(last) +
                        "% (+" + Num(rise) + " points, threshold " + Num(inc) + ") between two " +
                        "windows of " + std::to_string(w) + " samples, " + When(d.ts_us) +
                        ": memory is growing and may run out";
        f.recommendation =
            "look for tensors kept across steps: accumulating losses with their graph (use "
            "loss.item() or .detach()), lists of outputs, growing caches; check with "
            "torch.cuda.memory_summary(); if the growth is expected (longer sequences), make "
            "sure the peak fits in memory";
        v->Add(std::move(f));
      }
      s.armed = !met;
    }
  }

  std::string Summary() const override {
    std::string s;
    for (const auto& [key, ser] : series_) {
      // A series exists once it has a value (OnDatapoint adds it as it makes it).
      s += (s.empty() ? "" : "; ") + key + " memory " + Num(ser.first) + "% at the first of " +
           std::to_string(ser.count) + " values, " + Num(ser.values.Values().back()) +
           "% at the last" + NotJudgedYet(ser.count, "values");
    }
    return s;
  }

  size_t OwnStateBytes() const override {
    size_t b = 0;
    for (const auto& [k, s] : series_) b += k.capacity() + s.values.bytes() + sizeof(Series);
    return b;
  }

 private:
  struct Series {
    explicit Series(size_t n) : values(n) {}
    Window values;
    int64_t count = 0;
    double first = 0;  // the first value seen, for the summary
    bool armed = true;
  };
  std::map<std::string, Series> series_;
};

}  // namespace

BuiltinDef GPUMemoryIncreaseDef() {
  return MakeDef<GPUMemoryIncrease>(
      "a GPU's mean memory use rose by more than increase points between two windows");
}

}  // namespace trainscope::rules_internal
