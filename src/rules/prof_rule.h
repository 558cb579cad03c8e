// ProfilerRule: the base of the built-in profiler rules (docs/rules/README.md, "Profiler rules").
// A profiler rule does not look at tensors: on every tick of the runner (at most once per second
// of the runner's clock) it reads what the profiler wrote since the last look (ProfilerFeed:
// system samples, framework timeline events; one reading shared by the profiler rules of a
// runner) and updates bounded statistics; it may fire at any time. At Finish it waits (up to 10 s)
// for the timeline file still being written, reads the rest and draws its conclusions.
//
// Findings carry the node/series in `tensor` (e.g. "algo-1/gpu0"), the training step when the
// timeline says which step ran at that time, and the data's time in the explanation.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rules/builtin.h"
#include "rules/prof_feed.h"

namespace trainscope::rules_internal {

// smdebug's scan_interval_us (accepted; the rules read data as it arrives).
ParamSpec ScanIntervalSpec();

class ProfilerRule : public BuiltinRule {
 public:
  using BuiltinRule::BuiltinRule;

  Result<Verdict> InvokeAtStep(int64_t step) override;
  Result<Verdict> OnTick(int64_t now_micros) override;
  Result<Verdict> Finish(int64_t last_step) override;
  std::string StatusNote() const override;
  size_t StateBytes() const override;

  // The feed polls at most this often (runner clock); Finish always polls.
  static constexpr int64_t kPollIntervalUs = 1'000'000;

 protected:
  Status OnBind() override;

  // Called for each new system sample and framework event, in time order, then once per poll.
  virtual void OnDatapoint(const Datapoint& d, Verdict* v);
  virtual void OnFramework(const TimelineEvent& e, Verdict* v);
  virtual void AfterBatch(Verdict* v);
  // At Finish, after the last data.
  virtual void OnEnd(Verdict* v);
  // GPU rules: with no GPU metrics in the data the final note says so.
  virtual bool NeedsGpu() const { return false; }
  // What was checked, for the final message when nothing was found ("" = a default summary).
  virtual std::string Summary() const { return {}; }
  // Bytes of the rule's own state.
  virtual size_t OwnStateBytes() const { return 0; }

  const ProfilerFeed& feed() const { return feed_->feed(); }
  int64_t datapoints() const { return datapoints_; }
  int64_t framework_events() const { return framework_events_; }
  // The training step running at ts (from step events seen so far), -1 if unknown.
  int64_t StepAt(int64_t ts_us) const;
  // Start time of the latest step seen (0: none): StepAt is reliable up to about there.
  int64_t StepInfoUntil() const;
  // "12.5 s into the run (step 40)" for a data time.
  std::string When(int64_t ts_us) const;
  // For a Summary, when the rule has seen `seen` <= its `patience` parameter's `what` and so judged
  // nothing: " (not judged: ...)", which says so and how to have it judge; "" otherwise.
  std::string NotJudgedYet(int64_t seen, const char* what) const;
  // A finding at data time ts: rule, trial, step (StepAt), the series in `tensor`.
  RuleFinding NewProfilerFinding(int64_t ts_us, std::string series) const;
  // A finding at a known step (-1: none), its trial the profiler's folder.
  RuleFinding NewProfilerFindingAtStep(int64_t step) const;

  static bool IsStepEvent(const TimelineEvent& e);

  // A step event whose Forward/Backward/Optimizer spans were recorded (the hook's

  // PhaseMinIntervalInMilliseconds marks the others "phases": false).

  static bool PhasesKept(const TimelineEvent& e);
  // The model's own spans (Forward, Backward(post-forward), Optimizer): the ones a step marked
  // "phases": false left out; the others (DataLoaderIter, user spans) are recorded on every step.
  static bool IsModelPhase(const TimelineEvent& e);
  static bool IsDataLoaderWait(const TimelineEvent& e);  // time the loop waits for a batch
  static bool IsDataLoaderWorker(const TimelineEvent& e);

 private:
  Verdict Consume(const ProfilerBatch& batch);
  SharedProfilerFeed* feed_ = nullptr;  // data()'s, shared with its other profiler rules
  size_t subscriber_ = 0;
  int64_t last_poll_us_ = 0;
  bool polled_ = false;
  int64_t datapoints_ = 0;
  int64_t framework_events_ = 0;
  std::deque<std::pair<int64_t, int64_t>> step_starts_;  // (start_us, step), thinned
};

// Percentile (0..100) of values, linear interpolation as numpy's default. NaN when empty.
double Percentile(std::vector<double> values, double p);

// A ring of the last `capacity` values.
class Window {
 public:
  explicit Window(size_t capacity = 1) : capacity_(capacity ? capacity : 1) {}
  void Add(double v);
  size_t size() const { return values_.size(); }
  bool full() const { return values_.size() >= capacity_; }
  std::vector<double> Values() const;  // oldest first
  double Mean() const;
  size_t bytes() const { return values_.capacity() * sizeof(double); }

 private:
  size_t capacity_;
  size_t next_ = 0;
  std::vector<double> values_;
};

// Declarations of the profiler rules' registry entries (one per prof_<rule>.cc).
BuiltinDef CPUBottleneckDef();
BuiltinDef IOBottleneckDef();
BuiltinDef LowGPUUtilizationDef();
BuiltinDef BatchSizeDef();
BuiltinDef GPUMemoryIncreaseDef();
BuiltinDef LoadBalancingDef();
BuiltinDef MaxInitializationTimeDef();
BuiltinDef StepOutlierDef();
BuiltinDef DataloaderDef();
BuiltinDef OverallSystemUsageDef();
BuiltinDef OverallFrameworkMetricsDef();
BuiltinDef HostMemoryGrowthDef();

}  // namespace trainscope::rules_internal
