// Planner: the hook's decisions, from the collections to a TensorPlan per tensor and step.
//
// Prepare() takes the collections to save (the included ones, or all of them with "all"),
// gives each the effective configs smdebug gives it (the hook's save and reduction configs
// where it has none; raw only for losses and the other scalar collections; no histograms for
// them), and numbers them 0..63. Then:
//   DueMask(mode, mode_step): bit i set when collection i is due at that step;
//   Plan(name, due): membership of `name` (regexes run once per name) & due -> merged plan,
//   cached per (name, due collections).
// References returned by Plan stay valid until the next Prepare().
//
// Short steps: a saved collection with min_save_period_ms > 0 (collection.h; `trainscope run`
// sets it on the collections the rules ask for) has its save_interval stretched, once the hook
// has measured the steps of a mode (SetStepMicros: the median step time), to
// interval x S with S the smallest of 1, 2, 5, 10, 20, 50 ... for which interval x S steps take
// at least that period. Mode steps below kThinFromStep and the steps listed in save_steps are
// saved as configured. So a training of 100 ms steps keeps "every step", one of 1 ms steps
// with a 50 ms period saves every 50th step (100th if the median step is a little under 1 ms).
// A step is kept when it is a multiple of the stretched interval, or at least that many steps
// after the collection's last saving step: a step time that moves between measurements (and
// the stretched interval with it, 200 and 500 in turn) cannot skip every multiple of both.
// A collection saved raw also keeps its saving steps at least (its raw bytes at its last
// saving step) / kRawBytesPerSecond apart (NoteRawBytes, EndSavingStep): the raw weights of a
// 100 M-parameter model (400 MB) at most every 100 s of training from step 200 on, so that a
// long run's trial and the time its saves take grow with the training's time, not with its
// model's size times its steps.
//
// Thread safety: none (owned by the Hook).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trainscope/collection.h"
#include "trainscope/hook.h"
#include "trainscope/hook_config.h"

namespace trainscope::capture {

inline constexpr size_t kMaxSavedCollections = 64;
// Mode steps before this one are never stretched (Short steps, above): the rules that judge
// the first steps (PoorWeightInitialization's first 10, early divergence) see them all.
inline constexpr int64_t kThinFromStep = 200;
// Short steps: the raw bytes per second of training a stretched collection may save (4 MiB/s:
// about 14 GiB an hour, SageMaker's default of every 500th step for a BERT-base on a GPU).
inline constexpr double kRawBytesPerSecond = 4.0 * 1024 * 1024;

// The stretched interval: interval x S, S the smallest of 1, 2, 5, 10, 20, 50 ... such that
// interval x S x step_us >= period_us (at most interval x 10^6). interval >= 1.
int64_t StretchedInterval(int64_t interval, int64_t step_us, int64_t period_us);

class Planner {
 public:
  // InvalidArgument for more than 64 collections to save. An included collection that can
  // match nothing (not defined, or no regex and no tensor names) is skipped and listed in
  // skipped(). `tensorboard`: histograms and TensorBoard scalars are planned.
  Status Prepare(CollectionManager& collections, const HookConfig& config, bool tensorboard);

  // Included collections the last Prepare() skipped: (name, one-line message saying why and
  // how to define it).
  struct Skipped {
    std::string name;
    std::string message;
  };
  const std::vector<Skipped>& skipped() const { return skipped_; }

  uint64_t DueMask(Mode mode, int64_t mode_step);
  // True when a saved collection has min_save_period_ms > 0 (the hook then measures steps).
  bool stretches() const { return stretches_; }
  // Short steps: `bytes` of `name`'s raw value were saved at the current step (due: the due
  // collections); they count for each due collection of `name` that saves raw values.
  void NoteRawBytes(std::string_view name, uint64_t due, uint64_t bytes);
  // Short steps: the saving step with `due` collections ends; the raw bytes each of them saved
  // in it (NoteRawBytes) set its period until its next saving step.
  void EndSavingStep(uint64_t due);
  // Forgets the quiet steps it remembers (DueMask): the next DueMask computes afresh.
  void ForgetQuietSteps() { quiet_ = {}; }
  // The median time of a step of `mode`, as the hook measured it (0: not known yet).
  void SetStepMicros(Mode mode, int64_t us) {
    const size_t m = static_cast<size_t>(mode) - 1;
    if (step_us_[m] != us) quiet_[m] = {};  // the stretched schedule changed
    step_us_[m] = us;
  }
  int64_t step_micros(Mode mode) const { return step_us_[static_cast<size_t>(mode) - 1]; }
  const TensorPlan& Plan(std::string_view name, uint64_t due);
  // The plan of `name` at a step with `due` collections, as if it also belonged to `extra`
  // (smdebug's save_tensor: its collections count whether or not they are included or due).
  // A collection without a reduction config uses `default_rc`. Not cached.
  TensorPlan PlanWith(std::string_view name, uint64_t due,
                      const std::vector<std::shared_ptr<Collection>>& extra,
                      const ReductionConfig& default_rc);
  // Forgets the cached membership of `name` (after it joined a collection's tensor_names).
  void Forget(std::string_view name);

  // Names of the collections being saved, in bit order.
  std::vector<std::string> SavedCollectionNames() const;
  // Adds every name seen so far to the tensor_names of the saved collections it belongs to
  // (the collections file lists them, as smdebug's does).
  void RecordSeenNames();
  int64_t plans_built() const { return plans_built_; }

 private:
  struct Entry {
    uint64_t members = 0;
    std::vector<std::pair<uint64_t, std::unique_ptr<TensorPlan>>> plans;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  TensorPlan Build(std::string_view name, uint64_t subset) const;
  void AddToPlan(std::string_view name, const Collection& c, const ReductionConfig& rc,
                 TensorPlan* p) const;

  // Short steps: the least time between saving steps of collection `i` (bit order):
  // min_save_period_ms, or its raw bytes at kRawBytesPerSecond if longer; 0: not stretched.
  int64_t PeriodMicros(size_t i) const;
  // False when collection `i` (bit order), due by its save config at `mode_step`, is left out
  // by the stretched interval (Short steps).
  bool KeptByStretch(size_t i, Mode mode, int64_t mode_step) const;
  // The first mode step at or after `from` at which a saved collection may be due (its
  // save_steps, its interval from start_step, stretched as KeptByStretch would at the current
  // step time, before its end_step); INT64_MAX if none.
  int64_t NextDue(Mode mode, int64_t from) const;

  // Per mode, the mode steps [from, until) at which nothing is due: a quiet step's DueMask
  // reads this and nothing of the collections (on a training of short steps, reading each
  // collection's schedule every step costs more than the rest of the step boundary: cold
  // memory). Cleared by Prepare and when the mode's step time changes.
  struct QuietSpan {
    int64_t from = 0;
    int64_t until = 0;
  };
  std::array<QuietSpan, 4> quiet_{};

  std::vector<std::shared_ptr<Collection>> saved_;
  std::vector<Skipped> skipped_;
  bool stretches_ = false;
  // Short steps, per saved collection (bit order): those whose config saves raw values, the
  // raw bytes each saved at the step in progress and at its last saving step.
  uint64_t raw_mask_ = 0;
  std::array<uint64_t, kMaxSavedCollections> step_raw_bytes_{};
  std::array<uint64_t, kMaxSavedCollections> raw_bytes_{};
  // Short steps, per mode and saved collection: the mode step of its last saving step (-1:
  // none yet).
  std::array<std::array<int64_t, kMaxSavedCollections>, 4> last_due_{};
  std::array<int64_t, 4> step_us_ = {0, 0, 0, 0};
  bool tensorboard_ = false;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> cache_;
  int64_t plans_built_ = 0;
};

}  // namespace trainscope::capture
