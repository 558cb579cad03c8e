#include "trainscope/collection.h"

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>

#include "trainscope/name_regex.h"

namespace trainscope {

namespace ck = collection_keys;

bool IsScalarCollection(std::string_view name) {
  return name == ck::kLosses || name == ck::kMetrics || name == ck::kSmMetrics ||
         name == "feature_importance" || name == "average_shap";
}

bool IsNonReductionCollection(std::string_view name) {
  return IsScalarCollection(name) || name == ck::kTensorflowSummaries;
}

bool IsTrainOnlyCollection(std::string_view name) {
  return name == ck::kGradients || name == ck::kOptimizerVariables;
}

const std::vector<std::string_view>& KnownCollectionNames() {
  static const std::vector<std::string_view> kNames = {ck::kDefault,
                                                       ck::kAll,
                                                       ck::kInputs,
                                                       ck::kOutputs,
                                                       ck::kWeights,
                                                       ck::kBiases,
                                                       ck::kGradients,
                                                       ck::kLosses,
                                                       ck::kLayers,
                                                       ck::kMetrics,
                                                       ck::kSmMetrics,
                                                       ck::kOptimizerVariables,
                                                       ck::kTensorflowSummaries};
  return kNames;
}

// One compiled regex per include_regex entry.
struct Collection::Regexes {
  std::vector<NameRegex> list;
};

Collection::Collection(std::string name) : name_(std::move(name)) {
  compiled_ = std::make_shared<const Regexes>();
}
Collection::~Collection() = default;
Collection::Collection(const Collection&) = default;
Collection& Collection::operator=(const Collection& other) {
  if (this == &other) return *this;
  const uint64_t version = version_;
  name_ = other.name_;
  include_regex_ = other.include_regex_;
  compiled_ = other.compiled_;
  tensor_names_ = other.tensor_names_;
  reduction_config_ = other.reduction_config_;
  save_config_ = other.save_config_;
  save_histogram_ = other.save_histogram_;
  min_save_period_ms_ = other.min_save_period_ms_;
  version_ = std::max(version, other.version_);
  Changed();
  return *this;
}

namespace {

std::atomic<uint64_t> g_mutations{0};

}  // namespace

void Collection::Changed() {
  ++version_;
  g_mutations.fetch_add(1, std::memory_order_relaxed);
}

uint64_t CollectionManager::MutationCount() { return g_mutations.load(std::memory_order_relaxed); }

void CollectionManager::StructureChanged() {
  ++structure_version_;
  g_mutations.fetch_add(1, std::memory_order_relaxed);
}

namespace {

Result<NameRegex> CompileRegex(const std::string& collection, const std::string& regex) {
  Result<NameRegex> re = NameRegex::Compile(regex);
  if (re.ok()) return re;
  return Status::InvalidArgument(
      "collection '" + collection + "': include_regex '" + regex +
      "' is not a valid regular expression (" + re.status().message() +
      "); fix it or escape its special characters. Regexes are ECMAScript: Python's (?!...) "
      "lookahead works, lookbehind and (?P<name>...) groups do not");
}

}  // namespace

Status Collection::Include(std::string regex) {
  TS_ASSIGN_OR_RETURN(NameRegex re, CompileRegex(name_, regex));
  auto next = std::make_shared<Regexes>(*compiled_);
  next->list.push_back(std::move(re));
  compiled_ = std::move(next);
  include_regex_.push_back(std::move(regex));
  Changed();
  return Status::OK();
}

Status Collection::SetIncludeRegex(std::vector<std::string> regexes) {
  auto next = std::make_shared<Regexes>();
  for (const auto& r : regexes) {
    TS_ASSIGN_OR_RETURN(NameRegex re, CompileRegex(name_, r));
    next->list.push_back(std::move(re));
  }
  compiled_ = std::move(next);
  include_regex_ = std::move(regexes);
  Changed();
  return Status::OK();
}

void Collection::AddTensorName(std::string name) {
  if (tensor_names_.insert(std::move(name)).second) Changed();
}

void Collection::RemoveTensorName(const std::string& name) {
  if (tensor_names_.erase(name) > 0) Changed();
}

void Collection::SetTensorNames(std::set<std::string> names) {
  tensor_names_ = std::move(names);
  Changed();
}

Status Collection::set_reduction_config(std::optional<ReductionConfig> c) {
  if (c) TS_RETURN_IF_ERROR(c->Validate("collection '" + name_ + "': reduction_config"));
  reduction_config_ = std::move(c);
  Changed();
  return Status::OK();
}

Status Collection::set_save_config(std::optional<SaveConfig> c) {
  if (c) TS_RETURN_IF_ERROR(c->Validate("collection '" + name_ + "': save_config"));
  save_config_ = std::move(c);
  Changed();
  return Status::OK();
}

void Collection::set_save_histogram(bool v) {
  save_histogram_ = v;
  Changed();
}

Status Collection::set_min_save_period_ms(int64_t ms) {
  if (ms < 0) {
    return Status::InvalidArgument("collection '" + name_ + "': min_save_period_ms is " +
                                   std::to_string(ms) + "; it must be >= 0 (0: off)");
  }
  min_save_period_ms_ = ms;
  Changed();
  return Status::OK();
}

bool Collection::Matches(std::string_view tensor) const {
  if (!tensor_names_.empty() && tensor_names_.count(std::string(tensor)) > 0) return true;
  for (const auto& re : compiled_->list) {
    if (re.Search(tensor)) return true;
  }
  return false;
}

CollectionManager CollectionManager::WithPyTorchDefaults() {
  CollectionManager m;
  for (auto name :
       {ck::kAll, ck::kDefault, ck::kWeights, ck::kBiases, ck::kGradients, ck::kLosses}) {
    m.GetOrCreate(name);
  }
  // Fixed, valid regexes: Include cannot fail here.
  (void)m.Get(ck::kWeights)->Include("^(?!gradient).*weight");
  (void)m.Get(ck::kBiases)->Include("^(?!gradient).*bias");
  (void)m.Get(ck::kGradients)->Include("^gradient");
  (void)m.Get(ck::kLosses)->Include("[Ll]oss_(?!input).*output");
  return m;
}

bool CollectionManager::IsBuiltIn(std::string_view name) {
  return name == ck::kAll || name == ck::kDefault || name == ck::kWeights || name == ck::kBiases ||
         name == ck::kGradients || name == ck::kLosses;
}

std::shared_ptr<Collection> CollectionManager::Get(std::string_view name) const {
  for (const auto& c : collections_) {
    if (c->name() == name) return c;
  }
  return nullptr;
}

std::shared_ptr<Collection> CollectionManager::GetOrCreate(std::string_view name) {
  if (auto c = Get(name)) return c;
  collections_.push_back(std::make_shared<Collection>(std::string(name)));
  StructureChanged();
  return collections_.back();
}

void CollectionManager::Add(std::shared_ptr<Collection> c) {
  StructureChanged();
  for (auto& existing : collections_) {
    if (existing->name() == c->name()) {
      existing = std::move(c);
      return;
    }
  }
  collections_.push_back(std::move(c));
}

void CollectionManager::SetParameterTrainable(const std::string& name, bool trainable) {
  auto [it, added] = parameters_.try_emplace(name, trainable);
  if (!added && it->second == trainable) return;
  it->second = trainable;
  StructureChanged();
}

void CollectionManager::SetModuleOrder(std::vector<ModuleInfo> modules) {
  modules_ = std::move(modules);
  StructureChanged();
}

void CollectionManager::SetEnvironments(std::vector<std::string> environments) {
  environments_ = std::move(environments);
  StructureChanged();
}

uint64_t CollectionManager::version() const {
  uint64_t v = structure_version_;
  for (const auto& c : collections_) v += c->version();
  return v;
}

namespace {

using Json = nlohmann::ordered_json;

Json SaveConfigModeJson(const SaveConfigMode& m) {
  Json j;
  j["save_interval"] = m.save_interval;
  j["save_steps"] = m.save_steps;
  j["start_step"] = m.start_step;
  j["end_step"] = m.end_step ? Json(*m.end_step) : Json(nullptr);
  return j;
}

}  // namespace

std::string CollectionManager::ToJson(int num_workers) const {
  Json colls = Json::object();
  for (const auto& c : collections_) {
    Json j;
    j["name"] = c->name();
    j["include_regex"] = c->include_regex();
    j["tensor_names"] = Json::array();
    for (const auto& t : c->tensor_names()) j["tensor_names"].push_back(t);  // std::set: sorted
    if (const auto& r = c->reduction_config()) {
      j["reduction_config"] = {{"save_raw_tensor", r->save_raw_tensor},
                               {"reductions", r->ReductionsString()},
                               {"save_shape", r->save_shape}};
    } else {
      j["reduction_config"] = nullptr;
    }
    if (const auto& s = c->save_config()) {
      Json sc = Json::object();
      for (Mode m : {Mode::kTrain, Mode::kEval, Mode::kPredict, Mode::kGlobal}) {
        sc[std::string(ModeName(m))] = s->mode(m) ? SaveConfigModeJson(*s->mode(m)) : Json(nullptr);
      }
      j["save_config"] = std::move(sc);
    } else {
      j["save_config"] = nullptr;
    }
    j["save_histogram"] = c->save_histogram();
    colls[c->name()] = std::move(j);
  }
  Json root;
  root["collections"] = std::move(colls);
  root["_meta"] = {{"num_workers", num_workers}};
  if (!parameters_.empty()) {
    Json trainable = Json::array(), frozen = Json::array();
    for (const auto& [name, t] : parameters_) (t ? trainable : frozen).push_back(name);
    root["_meta"]["parameters"] = {{"trainable", std::move(trainable)},
                                   {"frozen", std::move(frozen)}};
  }
  if (!modules_.empty()) {
    Json modules = Json::array();
    for (const auto& m : modules_) modules.push_back({{"name", m.name}, {"type", m.type}});
    root["_meta"]["modules"] = std::move(modules);
  }
  if (!environments_.empty()) root["_meta"]["environments"] = environments_;
  return root.dump();
}

}  // namespace trainscope
