// Collections: named groups of tensors, each with its own SaveConfig and ReductionConfig
// (smdebug/core/collection.py, collection_manager.py, pytorch/collection.py).
//
// A tensor belongs to a collection if its name is in tensor_names or any include_regex matches
// somewhere in it (Python's re.search; the regexes are ECMAScript, which has Python's (?!...)
// lookahead but no lookbehind or (?P<name>...) groups).
//
// The collections file (collections/000000000/<worker>_collections.json) has smdebug's schema:
//   {"collections": {"<name>": {"name", "include_regex", "tensor_names" (sorted),
//                               "reduction_config": {"save_raw_tensor", "reductions",
//                                                    "save_shape"} | null,
//                               "save_config": {"TRAIN": {"save_interval", "save_steps",
//                                               "start_step", "end_step"}, ...} | null,
//                               "save_histogram"}, ...},
//    "_meta": {"num_workers": N}}
//
// Thread safety: none. A Collection or CollectionManager is used by one thread at a time (the
// training thread, or the thread that configures the hook before training).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/reduction_config.h"
#include "trainscope/save_config.h"
#include "trainscope/status.h"
#include "trainscope/trial.h"  // ModuleInfo

namespace trainscope {

// smdebug's CollectionKeys.
namespace collection_keys {
inline constexpr std::string_view kDefault = "default";
inline constexpr std::string_view kAll = "all";
inline constexpr std::string_view kInputs = "inputs";
inline constexpr std::string_view kOutputs = "outputs";
inline constexpr std::string_view kWeights = "weights";
inline constexpr std::string_view kGradients = "gradients";
inline constexpr std::string_view kLosses = "losses";
inline constexpr std::string_view kBiases = "biases";
inline constexpr std::string_view kLayers = "layers";
inline constexpr std::string_view kSmMetrics = "sm_metrics";
inline constexpr std::string_view kOptimizerVariables = "optimizer_variables";
inline constexpr std::string_view kTensorflowSummaries = "tensorflow_summaries";
inline constexpr std::string_view kMetrics = "metrics";
}  // namespace collection_keys

// losses, metrics, sm_metrics, feature_importance, average_shap: saved raw, never reduced, no
// histograms (smdebug's SCALAR_COLLECTIONS).
bool IsScalarCollection(std::string_view name);
// SCALAR_COLLECTIONS plus tensorflow_summaries: their reduction config is forced to raw only.
bool IsNonReductionCollection(std::string_view name);
// gradients and optimizer_variables: never saved in EVAL or PREDICT.
bool IsTrainOnlyCollection(std::string_view name);
// Every name smdebug gives a meaning to (CollectionKeys), for "did you mean" messages.
const std::vector<std::string_view>& KnownCollectionNames();

class Collection {
 public:
  explicit Collection(std::string name);
  ~Collection();
  Collection(const Collection&);
  Collection& operator=(const Collection&);

  const std::string& name() const { return name_; }

  const std::vector<std::string>& include_regex() const { return include_regex_; }
  // Adds a regex. InvalidArgument naming the collection and the regex if it does not compile.
  Status Include(std::string regex);
  // Replaces all regexes (all or none: the old ones stay if one is bad).
  Status SetIncludeRegex(std::vector<std::string> regexes);

  const std::set<std::string>& tensor_names() const { return tensor_names_; }
  void AddTensorName(std::string name);
  void RemoveTensorName(const std::string& name);
  void SetTensorNames(std::set<std::string> names);

  const std::optional<ReductionConfig>& reduction_config() const { return reduction_config_; }
  // InvalidArgument (naming this collection) if the config does not Validate().
  Status set_reduction_config(std::optional<ReductionConfig> c);
  const std::optional<SaveConfig>& save_config() const { return save_config_; }
  Status set_save_config(std::optional<SaveConfig> c);
  bool save_histogram() const { return save_histogram_; }
  void set_save_histogram(bool v);
  // trainscope's extension of smdebug's CollectionParameters, "min_save_period_ms" (0: off):
  // when the training's steps are short, the hook stretches this collection's save_interval (by
  // 1, 2, 5, 10, 20, 50 ...) so that its saving steps are at least this many milliseconds of
  // training apart (planner.h, "Short steps"), and, for a collection saved raw, at least its
  // raw bytes at 4 MiB/s apart (a long training of a large model). `trainscope run` sets it on
  // the collections it generates for the rules; it is not written to the collections file.
  int64_t min_save_period_ms() const { return min_save_period_ms_; }
  // InvalidArgument (naming this collection) for a negative period.
  Status set_min_save_period_ms(int64_t ms);

  // True if `tensor` is in tensor_names() or an include regex matches somewhere in it.
  bool Matches(std::string_view tensor) const;
  bool empty() const { return include_regex_.empty() && tensor_names_.empty(); }

  // Changes on every mutation: the hook re-plans when a collection it uses changed.
  uint64_t version() const { return version_; }

 private:
  struct Regexes;
  void Changed();  // ++version_, and CollectionManager::MutationCount() changes

  std::string name_;
  std::vector<std::string> include_regex_;
  std::shared_ptr<const Regexes> compiled_;  // immutable, shared between copies
  std::set<std::string> tensor_names_;
  std::optional<ReductionConfig> reduction_config_;
  std::optional<SaveConfig> save_config_;
  bool save_histogram_ = true;
  int64_t min_save_period_ms_ = 0;
  uint64_t version_ = 0;
};

class CollectionManager {
 public:
  // Empty.
  CollectionManager() = default;
  // PyTorch's built-ins, with smdebug's regexes: all (no regex until save_all), default (the
  // hook's include_regex), weights "^(?!gradient).*weight", biases "^(?!gradient).*bias",
  // gradients "^gradient", losses "[Ll]oss_(?!input).*output".
  static CollectionManager WithPyTorchDefaults();
  // True for the names WithPyTorchDefaults() creates (these may stay empty without error).
  static bool IsBuiltIn(std::string_view name);

  // nullptr if there is no such collection.
  std::shared_ptr<Collection> Get(std::string_view name) const;
  // Creates an empty collection if there is none.
  std::shared_ptr<Collection> GetOrCreate(std::string_view name);
  // Adds `c`, replacing a collection of the same name (in its place).
  void Add(std::shared_ptr<Collection> c);
  // In creation order.
  const std::vector<std::shared_ptr<Collection>>& collections() const { return collections_; }

  // Changes when a collection is added or any collection changes. Reads every collection.
  uint64_t version() const;
  // Changes whenever any collection or any manager of the process changes (a relaxed atomic
  // counter): while it stays the same, every version() stays the same, so a caller that checks
  // version() every step reads this instead (the hook's step boundary).
  static uint64_t MutationCount();

  // The model's parameters as the hook registered them (by their tensor names): trainable
  // (requires_grad) or frozen. Written as the collections file's _meta.parameters
  // (docs/formats/trial.md), so rules tell a parameter frozen on purpose from one that gets no
  // gradient by mistake. The last call for a name wins.
  void SetParameterTrainable(const std::string& name, bool trainable);
  const std::map<std::string, bool>& parameters() const { return parameters_; }

  // The registered modules in the order their forward calls finished in the first step (with
  // their class names). Written as the collections file's _meta.modules (docs/formats/trial.md),
  // so rules walk layers in the order data flows through them. Replaces an earlier order.
  void SetModuleOrder(std::vector<ModuleInfo> modules);
  const std::vector<ModuleInfo>& module_order() const { return modules_; }

  // The reinforcement-learning environment or agent libraries the training imported (top-level
  // module names: "gymnasium"...). Written as the collections file's _meta.environments
  // (docs/formats/trial.md), so the loss rules know the losses are an agent's. Replaces an
  // earlier list.
  void SetEnvironments(std::vector<std::string> environments);
  const std::vector<std::string>& environments() const { return environments_; }

  // The collections file content, with _meta.num_workers = num_workers.
  std::string ToJson(int num_workers) const;

 private:
  std::vector<std::shared_ptr<Collection>> collections_;
  std::map<std::string, bool> parameters_;  // tensor name -> trainable
  std::vector<ModuleInfo> modules_;         // forward order
  std::vector<std::string> environments_;   // _meta.environments
  uint64_t structure_version_ = 0;
  void StructureChanged();  // ++structure_version_, and MutationCount() changes
};

}  // namespace trainscope
