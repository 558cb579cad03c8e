// Dataloader (docs/rules/Dataloader.md): smdebug's check of how many data-loader workers run in
// parallel against the cores (median below min_threshold% or above max_threshold% of the cores),
// and trainscope's checks of how long the training loop waits for its batches (more than
// wait_threshold% of the loop's time in DataLoaderIter) and of the loop's own time outside the
// model's spans and the DataLoader (more than wait_threshold% and loop_ms_threshold ms a step).
#include <algorithm>
#include <map>
#include <optional>
#include <thread>
#include <utility>

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
            {"loop_ms_threshold", ParamType::kDouble, "10",
             "trainscope: ms per step the loop must spend outside the model's forward, backward "
             "and optimizer and outside any DataLoader before that time's share is judged "
             "against wait_threshold (a negative value turns that check off)"},
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
    if (wait || step || IsModelPhase(e)) {
      if (loops_.size() >= 64 && !loops_.count(e.node_id)) return;
      Loop& l = loops_[e.node_id];
      if (wait || step) {
        if (l.start_us == 0 || e.start_us < l.start_us) l.start_us = e.start_us;
        l.end_us = std::max(l.end_us, e.end_us());
      }
      if (wait) {
        l.wait_us += e.dur_us;
        ++l.waits;
        l.last_ts = e.end_us();
      }
      if (!e.step) return;
      if (step) {
        // Events come in order of their start: a step's own spans (the model's, its DataLoader
        // waits) start inside it, before the next step starts; so a step is complete when the
        // next one arrives.
        if (l.pending_step) CloseStep(l);
        l.pending_step = *e.step;
        l.pending_us = e.dur_us;
        l.pending_phased = PhasesKept(e);
        l.last_step_ts = e.end_us();
      } else {
        Inside& in = l.inside[*e.step];
        in.us += e.dur_us;
        if (!wait && e.phase.rfind("Forward", 0) == 0) {
          in.model = true;
          ++in.forwards;
        } else if (!wait && e.phase.rfind("Backward", 0) == 0) {
          ++in.backwards;
        }
        // Bounded: spans of steps that never get a step event are dropped, oldest first.
        if (l.inside.size() > 64) l.inside.erase(l.inside.begin());
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
    // The loop's own time: batches read or made in the loop without a DataLoader, or other work
    // between the model's calls. On a GPU the loop's CPU side waits for the device outside the
    // model's spans (a .item(), a copy), so there the GPU rules judge a starved device instead.
    const double loop_ms = params().Double("loop_ms_threshold");
    if (loop_ms < 0 || feed().saw_gpu()) return;
    for (auto& [node, l] : loops_) {
      if (l.fired_outside) continue;
      auto outside = OutsideModel(l);
      if (!outside || 100.0 * outside->first <= limit || outside->second < loop_ms) continue;
      if (Rollout(l)) continue;  // the loop's work between the model's calls is the step's own
      l.fired_outside = true;
      RuleFinding f = NewProfilerFinding(l.last_step_ts, node + "/loop");
      f.value = 100.0 * outside->first;
      f.threshold = limit;
      f.condition =
          "% of the training loop's time outside the model's forward, backward and optimizer "
          "and outside any DataLoader > wait_threshold, and >= loop_ms_threshold ms per step";
      f.explanation = "the training loop spent " + Num(f.value.value()) + "% of its time (" +
                      Num(outside->second) + " ms of a typical step, over the last " +
                      std::to_string(std::min<int64_t>(l.judged_steps, 1000)) +
                      " steps) outside the model's forward, backward and optimizer step and "
                      "outside any DataLoader, " +
                      When(l.last_step_ts) +
                      ": the loop itself is the bottleneck, most often reading or preparing "
                      "batches in the loop";
      f.recommendation =
          "load and prepare the batches in a torch.utils.data.DataLoader with num_workers > 0 "
          "(it overlaps loading with the model's compute) instead of in the loop; move other "
          "per-step work (logging, metrics, evaluation, checkpoints) to every N steps; `trainscope "
          "timeline` shows what the loop does between the model's spans";
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
    for (const auto& [node, l] : loops_) {
      if (auto outside = OutsideModel(l)) {
        out += (out.empty() ? "" : "; ") + node + ": outside the model and DataLoaders " +
               Num(100.0 * outside->first) + "% of a typical step (" + Num(outside->second) +
               " ms)";
        if (Rollout(l)) {
          out += ", between the model's calls: a median " + Num(Percentile(l.calls.Values(), 50)) +
                 " calls of the model for each backward() (a rollout, as a policy stepping an "
                 "environment, or step-by-step generation), whose work between the calls is "
                 "part of the step, not data loading: not judged";
        }
      }
    }
    if (worker_events_ > 0) {
      out += (out.empty() ? "" : "; ") + std::string("median parallel workers ") +
             Num(Percentile(parallel_.Values(), 50));
    }
    return out.empty() ? "no data-loader events in the framework timeline" : out;
  }

  size_t OwnStateBytes() const override {
    size_t loops = 0;
    for (const auto& [node, l] : loops_) {
      loops += sizeof(Loop) + 64 + l.inside.size() * 48 + l.outside_ms.bytes() + l.step_ms.bytes() +
               l.calls.bytes();
    }
    return loops + parallel_.bytes() + batch_workers_.capacity() * sizeof(TimelineEvent);
  }

 private:
  struct Inside {
    int64_t us = 0;                       // the step's model spans and DataLoader waits
    bool model = false;                   // a Forward span ran in it
    int64_t forwards = 0, backwards = 0;  // the model's Forward and Backward spans in it
  };
  struct Loop {
    int64_t start_us = 0, end_us = 0, wait_us = 0, waits = 0, last_ts = 0;
    // The loop's own time (CloseStep): the step in progress and the spans inside recent steps.
    std::optional<int64_t> pending_step;
    int64_t pending_us = 0, last_step_ts = 0, judged_steps = 0;
    bool pending_phased = false;
    std::map<int64_t, Inside> inside;
    // The model's calls per backward() of each judged step (a step without a Backward span
    // counts its calls).
    Window outside_ms{1000}, step_ms{1000}, calls{1000};
    bool fired = false, fired_outside = false;
  };

  // The pending step is complete: its time outside the model's spans and its DataLoader waits,
  // when its phases were kept and the model ran in it.
  static void CloseStep(Loop& l) {
    auto it = l.inside.find(*l.pending_step);
    if (l.pending_phased && it != l.inside.end() && it->second.model) {
      l.outside_ms.Add(static_cast<double>(std::max<int64_t>(0, l.pending_us - it->second.us)) /
                       1000.0);
      l.step_ms.Add(static_cast<double>(l.pending_us) / 1000.0);
      l.calls.Add(static_cast<double>(it->second.forwards) /
                  static_cast<double>(std::max<int64_t>(1, it->second.backwards)));
      ++l.judged_steps;
    }
    if (it != l.inside.end()) l.inside.erase(it);
    l.pending_step.reset();
  }

  // The typical step's time outside the model's spans and DataLoader waits: (share of the
  // step, 0..1; ms), the medians over the last 1000 steps the model was seen in; nullopt before
  // `patience` (at least 10) such steps. Medians: a few stalls (a checkpoint every N steps) are
  // StepOutlier's, not the loop's.
  std::optional<std::pair<double, double>> OutsideModel(const Loop& l) const {
    const int64_t patience = std::max<int64_t>(params().Int("patience"), 10);
    if (l.judged_steps < patience) return std::nullopt;
    const double outside = Percentile(l.outside_ms.Values(), 50);
    const double step = Percentile(l.step_ms.Values(), 50);
    if (step <= 0) return std::nullopt;
    return std::make_pair(std::min(1.0, outside / step), outside);
  }

  // A rollout: the model is called a median kRolloutCalls times or more for each backward()
  // (gradient accumulation and LBFGS's closure call it once per backward()); the loop's work
  // between those calls (an environment's steps, sampling the next input) is then the step's
  // computation, not batches being read or made.
  static constexpr double kRolloutCalls = 8;
  static bool Rollout(const Loop& l) {
    return !l.calls.Values().empty() && Percentile(l.calls.Values(), 50) >= kRolloutCalls;
  }

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
