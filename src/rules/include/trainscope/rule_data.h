// RuleData: what rules read (the base trial and any other trials), through a cache shared by
// every rule of one runner, so two rules asking for the same tensor at the same step read and
// reduce it once.
//
// The cache holds, per (trial, global step): tensor values (which point into memory maps of the
// event files, so holding one copies nothing), one TensorStats per tensor (every reduction of a
// raw tensor comes from one pass), saved reductions, tensor-name selections and the step's mode.
// It keeps the `max_cached_steps` most recently used steps and drops the rest, so its size does
// not grow with the number of steps in the trial.
//
// Values are those of the first worker that saved the tensor (smdebug's default).
//
// Thread safety: not thread-safe; one runner thread uses it (with its rules).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/modes.h"
#include "trainscope/reductions.h"
#include "trainscope/status.h"
#include "trainscope/tensor.h"
#include "trainscope/trial.h"

namespace trainscope {
namespace rules_internal {
class SharedProfilerFeed;
}  // namespace rules_internal

// Which tensors a rule looks at: the union of the named collections and of the regexes
// (smdebug's collection_names and tensor_regex). An empty selection selects every tensor when
// all_if_empty, else none.
struct TensorSelection {
  std::vector<std::string> collections;
  std::vector<std::string> regexes;  // ECMAScript, re.search semantics
  bool all_if_empty = false;

  bool empty() const { return collections.empty() && regexes.empty(); }
  std::string Key() const;  // for caching
};

struct RuleDataOptions {
  size_t max_cached_steps = 2;  // steps whose cached values are kept (>= 1)
  // The clock rules see (StalledTrainingRule). Default: Env::Default()->NowMicros().
  std::function<int64_t()> now_micros;
  // How other trials are opened (OpenTrial). Default: Trial::Open with default options.
  std::function<Result<std::shared_ptr<Trial>>(const std::string& path)> open_trial;
  // Where profiler rules read system/ and framework/ from. Empty: the base trial's folder.
  std::string profiler_dir;
};

struct RuleDataStats {
  int64_t value_hits = 0;      // values served from the cache
  int64_t value_reads = 0;     // values read from a trial
  int64_t stats_computed = 0;  // passes over a raw tensor
  int64_t stats_hits = 0;
  int64_t evictions = 0;      // steps dropped from the cache
  size_t cached_steps = 0;    // now
  size_t cached_entries = 0;  // now: values + stats + reductions + selections
};

class RuleData {
 public:
  // REQUIRES: base != nullptr.
  explicit RuleData(std::shared_ptr<Trial> base, RuleDataOptions options = {});
  ~RuleData();
  RuleData(const RuleData&) = delete;
  RuleData& operator=(const RuleData&) = delete;

  // Trial 0 is the base trial.
  Trial& trial(size_t index = 0) const { return *trials_[index]; }
  size_t num_trials() const { return trials_.size(); }
  // Opens another trial (or returns the index of one already open at this path).
  Result<size_t> OpenTrial(const std::string& path);

  int64_t NowMicros() const;
  // The folder holding the profiler's system/ and framework/ (RuleDataOptions::profiler_dir, else
  // the base trial's path).
  std::string ProfilerDir() const;
  // The reader of ProfilerDir()'s system/ and framework/ that the profiler rules bound to this
  // RuleData share (made at the first call), so each file is parsed once however many rules
  // read it (src/rules/prof_feed.h).
  rules_internal::SharedProfilerFeed& profiler_feed();

  // The step's mode and mode step in the base trial (kGlobal, step if unknown). Cached.
  std::pair<Mode, int64_t> StepMode(int64_t global_step);

  // Tensor names of the selection that exist at `step` (sorted). Cached per step; regexes are
  // compiled once and each name is matched against a selection once per RuleData (names repeat
  // from step to step). InvalidArgument for a regex that does not compile.
  Result<std::vector<std::string>> Select(const TensorSelection& selection, int64_t step,
                                          size_t trial = 0);
  // The raw value. Errors as Trial::Value.
  Result<Tensor> Value(const std::string& tensor, int64_t step, size_t trial = 0);
  // Statistics of the raw value (one pass, cached). NotFound if no raw value was saved.
  Result<TensorStats> Stats(const std::string& tensor, int64_t step, size_t trial = 0);
  // A reduction: from the cached stats of the raw value when it was saved, else the saved
  // reduction (smdebug's reduction_value order is the other way round; the definitions are the
  // same: reductions.h). NotFound when neither exists.
  Result<double> ReductionValue(const std::string& tensor, int64_t step, Reduction r,
                                size_t trial = 0);

  // Called by the runner before it evaluates `step`: makes it the most recent cached step and
  // drops the least recently used steps beyond max_cached_steps.
  void BeginStep(int64_t step);
  // Drops everything cached.
  void ClearCache();

  RuleDataStats stats() const;

 private:
  struct StepCache;
  struct Matcher;  // a compiled selection with its memo of names
  StepCache& CacheFor(size_t trial, int64_t step);
  void Evict();
  Result<Matcher*> MatcherFor(const TensorSelection& selection, size_t trial);

  RuleDataOptions options_;
  std::vector<std::shared_ptr<Trial>> trials_;
  std::vector<std::string> trial_paths_;
  // Most recently used first.
  std::list<std::pair<std::pair<size_t, int64_t>, std::unique_ptr<StepCache>>> cache_;
  std::map<std::pair<size_t, std::string>, std::unique_ptr<Matcher>> matchers_;
  std::unique_ptr<rules_internal::SharedProfilerFeed> profiler_feed_;
  RuleDataStats stats_;
};

}  // namespace trainscope
