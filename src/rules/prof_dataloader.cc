// Dataloader (docs/rules/Dataloader.md): smdebug's check of how many data-loader workers run in
// parallel against the cores (median below min_threshold% or above max_threshold% of the cores),
// and trainscope's check of how long the training loop waits for its batches (more than
// wait_threshold% of the loop's time in DataLoaderIter).
#include <algorithm>
#include <map>
#include <thread>

#include "rules/prof_rule.h"

namespace trainscope::rules_internal {
namespace {

class Dataloader : public ProfilerRule {
 public:
  static constexpr const char* kName = "Dataloader";
  static std::vector<ParamSpec> Specs() {
    return {{"min_threshold", ParamType::kDouble, "70",
             "fewer parallel workers than this % of the cores is too few"},
            {"max_threshold", ParamType::kDouble, "200",
             "more parallel workers than this % of the cores is too many"},
            {"patience", ParamType::kInt, "10", "data-loader events to see before the rule judges"},
            {"wait_threshold", ParamType::kDouble, "50",
             "% of the training loop's time spent waiting for batches that is too much"},
            ScanIntervalSpec()};
  }
  explicit Dataloader(ParsedParams p) : ProfilerRule(kName, std::move(p)) {}
  Status Validate() const {
    if (params().Double("min_threshold") > params().Double("max_threshold")) {
      return Status::InvalidArgument("Dataloader: min_threshold must be <= max_threshold");
    }
    return Status::OK();
  }

 protected:
  void OnFramework(const TimelineEvent& e, Verdict*) override {
    const bool wait = IsDataLoaderWait(e), step = IsStepEvent(e);
    if (wait || step) {
      Loop& l = loops_[e.node_id];
      if (l.start_us == 0 || e.start_us < l.start_us) l.start_us = e.start_us;
      l.end_us = std::max(l.end_us, e.end_us());
      if (wait) {
        l.wait_us += e.dur_us;
        ++l.waits;
        l.last_ts = e.end_us();
      }
    }
    if (IsDataLoaderWorker(e)) batch_workers_.push_back(e);
  }

  void AfterBatch(Verdict* v) override {
    // Parallel workers: how many worker events run at the start of each.
    std::sort(
        batch_workers_.begin(), batch_workers_.end(),
        [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_us < b.start_us; });
    for (size_t i = 0; i < batch_workers_.size(); ++i) {
      int running = 0;
      for (size_t j = 0; j <= i; ++j) {
        if (batch_workers_[j].end_us() > batch_workers_[i].start_us) ++running;
      }
      parallel_.Add(running);
      ++worker_events_;
      last_worker_ts_ = batch_workers_[i].start_us;
    }
    batch_workers_.clear();
    const int64_t patience = params().Int("patience");
    if (worker_events_ > patience && !fired_workers_) {
      const int cores = feed().cores() > 0 ? feed().cores()
                                           : static_cast<int>(std::thread::hardware_concurrency());
      const double median = Percentile(parallel_.Values(), 50);
      const double lo = cores * params().Double("min_threshold") / 100.0;
      const double hi = cores * params().Double("max_threshold") / 100.0;
      if (median < lo || median > hi) {
        fired_workers_ = true;
        const bool few = median < lo;
        RuleFinding f = NewProfilerFinding(last_worker_ts_, "DataLoaderWorker");
        f.value = median;
        f.threshold = few ? lo : hi;
        f.condition = few ? "median parallel data-loader workers < cores x min_threshold%"
                          : "median parallel data-loader workers > cores x max_threshold%";
        f.explanation = "a median of " + Num(median) + " data-loader workers ran in parallel on " +
                        std::to_string(cores) + " cores (" + (few ? "fewer than " : "more than ") +
                        Num(f.threshold.value()) + "), " + When(last_worker_ts_) +
                        (few ? ": the cores are under-used for data loading"
                             : ": the workers compete for the cores");
        f.recommendation =
            few ? "raise DataLoader num_workers towards the number of cores (keep one or two for "
                  "the training loop) and use pin_memory=True when training on a GPU"
                : "lower DataLoader num_workers to about the number of cores; too many workers "
                  "thrash the CPU caches and memory";
        v->Add(std::move(f));
      }
    }
    const double limit = params().Double("wait_threshold");
    for (auto& [node, l] : loops_) {
      if (l.fired || l.waits < patience || l.end_us <= l.start_us) continue;
      const double percent =
          100.0 * static_cast<double>(l.wait_us) / static_cast<double>(l.end_us - l.start_us);
      if (percent <= limit) continue;
      l.fired = true;
      RuleFinding f = NewProfilerFinding(l.last_ts, node + "/DataLoaderIter");
      f.value = percent;
      f.threshold = limit;
      f.condition = "% of the training loop's time waiting for the next batch > wait_threshold";
      f.explanation = "the training loop waited for its batches " + Num(percent) +
                      "% of the time (" + Num(l.wait_us / 1e6) + " s of " +
                      Num((l.end_us - l.start_us) / 1e6) + " s over " + std::to_string(l.waits) +
                      " batches; threshold " + Num(limit) + "%), " + When(l.last_ts) +
                      ": data loading is the bottleneck";
      f.recommendation =
          "make batches arrive faster: raise DataLoader num_workers (and prefetch_factor, "
          "persistent_workers=True), move slow per-sample work (decoding, augmentation) out of "
          "__getitem__ or onto the GPU, cache or pre-process the data set, and read it from "
          "local disk";
      v->Add(std::move(f));
    }
  }

  std::string Summary() const override {
    std::string out;
    for (const auto& [node, l] : loops_) {
      if (l.end_us <= l.start_us) continue;
      out +=
          (out.empty() ? "" : "; ") + node + ": waited for batches " +
          Num(100.0 * static_cast<double>(l.wait_us) / static_cast<double>(l.end_us - l.start_us)) +
          "% of the loop's time (" + std::to_string(l.waits) + " batches)";
    }
    if (worker_events_ > 0) {
      out += (out.empty() ? "" : "; ") + std::string("median parallel workers ") +
             Num(Percentile(parallel_.Values(), 50));
    }
    return out.empty() ? "no data-loader events in the framework timeline" : out;
  }

  size_t OwnStateBytes() const override {
    return loops_.size() * (sizeof(Loop) + 64) + parallel_.bytes() +
           batch_workers_.capacity() * sizeof(TimelineEvent);
  }

 private:
  struct Loop {
    int64_t start_us = 0, end_us = 0, wait_us = 0, waits = 0, last_ts = 0;
    bool fired = false;
  };
  std::map<std::string, Loop> loops_;
  std::vector<TimelineEvent> batch_workers_;
  Window parallel_{1000};
  int64_t worker_events_ = 0, last_worker_ts_ = 0;
  bool fired_workers_ = false;
};

}  // namespace

BuiltinDef DataloaderDef() {
  return MakeDef<Dataloader>(
      "too few or too many parallel data-loader workers for the cores, or the loop waits for "
      "batches more than wait_threshold% of the time");
}

}  // namespace trainscope::rules_internal
