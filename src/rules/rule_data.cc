#include "trainscope/rule_data.h"

#include <algorithm>
#include <unordered_map>

#include "rules/prof_feed.h"
#include "trainscope/env.h"
#include "trainscope/name_regex.h"

namespace trainscope {

std::string TensorSelection::Key() const {
  std::string k = all_if_empty ? "A|" : "N|";
  for (const auto& c : collections) k += "c:" + c + '\x1f';
  for (const auto& r : regexes) k += "r:" + r + '\x1f';
  return k;
}

struct RuleData::StepCache {
  struct ValueEntry {
    Status status;
    Tensor value;
  };
  struct StatsEntry {
    Status status;
    TensorStats stats;
  };
  struct DoubleEntry {
    Status status;
    double value = 0;
  };
  std::optional<std::pair<Mode, int64_t>> mode;
  std::unordered_map<std::string, ValueEntry> values;
  std::unordered_map<std::string, StatsEntry> stats;
  std::unordered_map<std::string, DoubleEntry> reductions;  // key: name + '\x1f' + reduction
  std::unordered_map<std::string, std::vector<std::string>> selections;

  size_t entries() const {
    return values.size() + stats.size() + reductions.size() + selections.size();
  }
};

struct RuleData::Matcher {
  bool all = false;
  std::vector<NameRegex> regexes;
  std::vector<std::string> names;  // sorted (collections' tensor_names)
  std::unordered_map<std::string, bool> memo;

  bool Matches(const std::string& name) {
    if (all) return true;
    auto it = memo.find(name);
    if (it != memo.end()) return it->second;
    bool keep = std::binary_search(names.begin(), names.end(), name);
    for (size_t i = 0; !keep && i < regexes.size(); ++i) keep = regexes[i].Search(name);
    if (memo.size() >= 100000) memo.clear();  // bounded even if names never repeat
    memo.emplace(name, keep);
    return keep;
  }
};

RuleData::RuleData(std::shared_ptr<Trial> base, RuleDataOptions options)
    : options_(std::move(options)) {
  if (options_.max_cached_steps == 0) options_.max_cached_steps = 1;
  trial_paths_.push_back(base->path());
  trials_.push_back(std::move(base));
}

RuleData::~RuleData() = default;

Result<size_t> RuleData::OpenTrial(const std::string& path) {
  for (size_t i = 0; i < trial_paths_.size(); ++i) {
    if (trial_paths_[i] == path) return i;
  }
  std::shared_ptr<Trial> t;
  if (options_.open_trial) {
    TS_ASSIGN_OR_RETURN(t, options_.open_trial(path));
  } else {
    TS_ASSIGN_OR_RETURN(auto opened, Trial::Open(path));
    t = std::move(opened);
  }
  trials_.push_back(std::move(t));
  trial_paths_.push_back(path);
  return trials_.size() - 1;
}

std::string RuleData::ProfilerDir() const {
  return options_.profiler_dir.empty() ? trials_[0]->path() : options_.profiler_dir;
}

rules_internal::SharedProfilerFeed& RuleData::profiler_feed() {
  if (!profiler_feed_) {
    profiler_feed_ = std::make_unique<rules_internal::SharedProfilerFeed>(nullptr, ProfilerDir());
  }
  return *profiler_feed_;
}

int64_t RuleData::NowMicros() const {
  if (options_.now_micros) return options_.now_micros();
  return static_cast<int64_t>(Env::Default()->NowMicros());
}

RuleData::StepCache& RuleData::CacheFor(size_t trial, int64_t step) {
  const auto key = std::make_pair(trial, step);
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->first == key) {
      if (it != cache_.begin()) cache_.splice(cache_.begin(), cache_, it);
      return *cache_.front().second;
    }
  }
  cache_.emplace_front(key, std::make_unique<StepCache>());
  Evict();
  return *cache_.front().second;
}

void RuleData::Evict() {
  const size_t limit = options_.max_cached_steps * trials_.size();
  while (cache_.size() > limit) {
    cache_.pop_back();
    ++stats_.evictions;
  }
}

void RuleData::BeginStep(int64_t step) { CacheFor(0, step); }

void RuleData::ClearCache() { cache_.clear(); }

std::pair<Mode, int64_t> RuleData::StepMode(int64_t global_step) {
  StepCache& c = CacheFor(0, global_step);
  if (!c.mode) {
    auto mode = trials_[0]->ModeOf(global_step);
    auto mode_step = trials_[0]->ModeStep(global_step);
    if (mode.ok() && mode_step.ok()) {
      c.mode = std::make_pair(*mode, *mode_step);
    } else {
      c.mode = std::make_pair(Mode::kGlobal, global_step);
    }
  }
  return *c.mode;
}

Result<RuleData::Matcher*> RuleData::MatcherFor(const TensorSelection& selection, size_t trial) {
  const auto key = std::make_pair(trial, selection.Key());
  auto it = matchers_.find(key);
  if (it != matchers_.end()) return it->second.get();
  auto m = std::make_unique<Matcher>();
  auto compile = [&](const std::string& re, const std::string& what) -> Status {
    Result<NameRegex> compiled = NameRegex::Compile(re);
    if (!compiled.ok()) {
      return Status::InvalidArgument("regex '" + re + "' (" + what +
                                     ") does not compile: " + compiled.status().message() +
                                     "; use ECMAScript syntax as re.search would");
    }
    m->regexes.push_back(std::move(compiled).value());
    return Status::OK();
  };
  if (selection.empty()) {
    m->all = selection.all_if_empty;
  } else {
    for (const auto& c : selection.collections) {
      auto info = trials_[trial]->collection(c);
      if (!info) continue;  // a collection not saved selects nothing
      m->names.insert(m->names.end(), info->tensor_names.begin(), info->tensor_names.end());
      for (const auto& re : info->include_regex) {
        TS_RETURN_IF_ERROR(compile(re, "include_regex of collection " + c));
      }
    }
    for (const auto& re : selection.regexes) TS_RETURN_IF_ERROR(compile(re, "tensor regex"));
    std::sort(m->names.begin(), m->names.end());
  }
  Matcher* raw = m.get();
  matchers_.emplace(key, std::move(m));
  return raw;
}

Result<std::vector<std::string>> RuleData::Select(const TensorSelection& selection, int64_t step,
                                                  size_t trial) {
  if (trial >= trials_.size()) {
    return Status::InvalidArgument("RuleData: no trial " + std::to_string(trial));
  }
  TS_ASSIGN_OR_RETURN(Matcher * matcher, MatcherFor(selection, trial));
  StepCache& c = CacheFor(trial, step);
  const std::string key = selection.Key();
  if (auto it = c.selections.find(key); it != c.selections.end()) return it->second;
  // All names saved at the step, once per step for every selection.
  const std::string all_key = "\x01all";
  auto all_it = c.selections.find(all_key);
  if (all_it == c.selections.end()) {
    auto names = trials_[trial]->TensorNames(Mode::kGlobal, step);
    if (!names.ok()) {
      if (names.status().code() != StatusCode::kNotFound) return names.status();
      names = std::vector<std::string>{};
    }
    all_it = c.selections.emplace(all_key, std::move(names).value()).first;
  }
  std::vector<std::string> out;
  for (const auto& n : all_it->second) {
    if (matcher->Matches(n)) out.push_back(n);
  }
  c.selections.emplace(key, out);
  return out;
}

Result<Tensor> RuleData::Value(const std::string& tensor, int64_t step, size_t trial) {
  if (trial >= trials_.size()) {
    return Status::InvalidArgument("RuleData: no trial " + std::to_string(trial));
  }
  StepCache& c = CacheFor(trial, step);
  if (auto it = c.values.find(tensor); it != c.values.end()) {
    ++stats_.value_hits;
    if (!it->second.status.ok()) return it->second.status;
    return it->second.value;
  }
  ++stats_.value_reads;
  auto r = trials_[trial]->Value(tensor, step);
  StepCache::ValueEntry e;
  if (r.ok()) {
    e.value = *r;
  } else {
    e.status = r.status();
  }
  // Only definite answers are cached: a step still being written may have the value later.
  if (r.ok() || r.status().code() == StatusCode::kNotFound) c.values.emplace(tensor, e);
  return r;
}

Result<TensorStats> RuleData::Stats(const std::string& tensor, int64_t step, size_t trial) {
  if (trial >= trials_.size()) {
    return Status::InvalidArgument("RuleData: no trial " + std::to_string(trial));
  }
  {
    StepCache& c = CacheFor(trial, step);
    if (auto it = c.stats.find(tensor); it != c.stats.end()) {
      ++stats_.stats_hits;
      if (!it->second.status.ok()) return it->second.status;
      return it->second.stats;
    }
  }
  auto v = Value(tensor, step, trial);
  StepCache::StatsEntry e;
  if (!v.ok()) {
    if (v.status().code() != StatusCode::kNotFound) return v.status();
    e.status = v.status();
  } else if (v->dtype == DType::kString || v->dtype == DType::kInvalid) {
    e.status = Status::NotFound("tensor " + tensor + " at step " + std::to_string(step) +
                                " is not numeric (" + std::string(DTypeName(v->dtype)) + ")");
  } else {
    auto s = ComputeStats(v->view());
    ++stats_.stats_computed;
    if (s.ok()) {
      e.stats = *s;
    } else {
      e.status = s.status();
    }
  }
  StepCache& c = CacheFor(trial, step);  // Value() may have reordered the cache
  c.stats.emplace(tensor, e);
  if (!e.status.ok()) return e.status;
  return e.stats;
}

Result<double> RuleData::ReductionValue(const std::string& tensor, int64_t step, Reduction r,
                                        size_t trial) {
  auto st = Stats(tensor, step, trial);
  if (st.ok()) return st->Value(r);
  if (st.status().code() != StatusCode::kNotFound) return st.status();
  StepCache& c = CacheFor(trial, step);
  std::string key = tensor + '\x1f' + std::to_string(static_cast<int>(r.op)) + (r.abs ? "a" : "");
  if (auto it = c.reductions.find(key); it != c.reductions.end()) {
    if (!it->second.status.ok()) return it->second.status;
    return it->second.value;
  }
  auto v = trials_[trial]->ReductionValue(tensor, step, r);
  StepCache::DoubleEntry e;
  if (v.ok()) {
    e.value = *v;
  } else {
    e.status = v.status();
  }
  if (v.ok() || v.status().code() == StatusCode::kNotFound) {
    CacheFor(trial, step).reductions.emplace(key, e);
  }
  return v;
}

RuleDataStats RuleData::stats() const {
  RuleDataStats s = stats_;
  s.cached_steps = cache_.size();
  s.cached_entries = 0;
  for (const auto& [key, c] : cache_) s.cached_entries += c->entries();
  return s;
}

}  // namespace trainscope
