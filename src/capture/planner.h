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
// Thread safety: none (owned by the Hook).
#pragma once

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

  uint64_t DueMask(Mode mode, int64_t mode_step) const;
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

  std::vector<std::shared_ptr<Collection>> saved_;
  std::vector<Skipped> skipped_;
  bool tensorboard_ = false;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> cache_;
  int64_t plans_built_ = 0;
};

}  // namespace trainscope::capture
