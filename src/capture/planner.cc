#include "capture/planner.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <numeric>

namespace trainscope::capture {
namespace {

const TensorPlan kNothing{};

// "did you mean" for a misspelt collection name.
std::string Suggestion(std::string_view name, const CollectionManager& cm) {
  std::vector<std::string> candidates;
  for (const auto& c : cm.collections()) candidates.push_back(c->name());
  for (auto k : KnownCollectionNames()) candidates.emplace_back(k);
  for (const auto& c : candidates) {
    if (c == std::string(name) + "s" || std::string(c) + "s" == name ||
        (c.size() == name.size() &&
         std::inner_product(c.begin(), c.end(), name.begin(), 0, std::plus<>(),
                            std::not_equal_to<>()) == 1)) {
      return " (did you mean '" + c + "'?)";
    }
  }
  return "";
}

// The collections a script can name: built in, or defined with something to match.
std::string KnownNames(const CollectionManager& cm) {
  std::set<std::string> names;
  for (const auto& c : cm.collections()) {
    if (!c->empty() || CollectionManager::IsBuiltIn(c->name())) names.insert(c->name());
  }
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

}  // namespace

Status Planner::Prepare(CollectionManager& collections, const HookConfig& config,
                        bool tensorboard) {
  tensorboard_ = tensorboard;
  std::set<std::string> included(config.default_include_collections.begin(),
                                 config.default_include_collections.end());
  if (config.include_collections) {
    included.insert(config.include_collections->begin(), config.include_collections->end());
  }
  if (!config.include_regex.empty()) included.insert(std::string(collection_keys::kDefault));
  if (config.save_all) included.insert(std::string(collection_keys::kAll));
  const bool save_every_collection = included.count(std::string(collection_keys::kAll)) > 0;

  // An included collection that can match nothing is skipped, not an error: a typo in
  // include_collections, or a name from smdebug's docs this script never defines, must not end
  // the training (the hook warns once; see skipped()).
  skipped_.clear();
  std::set<std::string> skip;
  for (const auto& name : included) {
    auto c = collections.Get(name);
    if (c != nullptr && (!c->empty() || CollectionManager::IsBuiltIn(name))) continue;
    skip.insert(name);
    const std::string define =
        "define it before the first step (hook.get_collection('" + name +
        "').include(regex), add_module_tensors, or a CollectionConfigurations entry with "
        "include_regex)";
    if (c == nullptr) {
      skipped_.push_back(
          {name, "collection '" + name + "' is not defined" + Suggestion(name, collections) +
                     "; known: " + KnownNames(collections) + ". It is skipped: " + define});
    } else {
      skipped_.push_back({name, "collection '" + name +
                                    "' has no include_regex and no tensor names; it is "
                                    "skipped: " +
                                    define});
    }
  }

  SaveConfig hook_save = config.save_config;
  hook_save.MergeDefaults(SaveConfig());
  std::vector<std::shared_ptr<Collection>> saved;
  for (const auto& c : collections.collections()) {
    // Effective configs, as smdebug's _prepare_collections gives them to every collection.
    if (IsNonReductionCollection(c->name()) && c->save_histogram()) c->set_save_histogram(false);
    if (!c->save_config()) {
      TS_RETURN_IF_ERROR(c->set_save_config(hook_save));
    } else if (!c->save_config()->complete()) {
      SaveConfig s = *c->save_config();
      s.MergeDefaults(hook_save);
      TS_RETURN_IF_ERROR(c->set_save_config(s));
    }
    if (IsNonReductionCollection(c->name())) {
      ReductionConfig raw_only;
      raw_only.save_raw_tensor = true;
      if (c->reduction_config() != raw_only) TS_RETURN_IF_ERROR(c->set_reduction_config(raw_only));
    } else if (!c->reduction_config()) {
      TS_RETURN_IF_ERROR(c->set_reduction_config(config.reduction_config));
    }
    if (save_every_collection || included.count(c->name()) > 0) {
      // Empty collections match nothing: skipped (named in skipped_ when included by name).
      if (skip.count(c->name()) > 0 || (c->empty() && !CollectionManager::IsBuiltIn(c->name()))) {
        continue;
      }
      saved.push_back(c);
    }
  }
  if (saved.size() > kMaxSavedCollections) {
    return Status::InvalidArgument("the hook saves " + std::to_string(saved.size()) +
                                   " collections; at most 64 are supported: merge some (a "
                                   "collection may have several include_regex)");
  }
  saved_ = std::move(saved);
  stretches_ = std::any_of(saved_.begin(), saved_.end(),
                           [](const auto& c) { return c->min_save_period_ms() > 0; });
  raw_mask_ = 0;
  for (size_t i = 0; i < saved_.size(); ++i) {
    if (saved_[i]->reduction_config()->save_raw_tensor) raw_mask_ |= uint64_t{1} << i;
  }
  step_raw_bytes_ = {};
  raw_bytes_ = {};
  for (auto& mode : last_due_) mode.fill(-1);
  cache_.clear();
  quiet_ = {};
  return Status::OK();
}

int64_t StretchedInterval(int64_t interval, int64_t step_us, int64_t period_us) {
  interval = std::max<int64_t>(interval, 1);
  if (step_us <= 0 || period_us <= 0 || interval > (int64_t{1} << 40)) return interval;
  static constexpr int64_t kMantissas[] = {1, 2, 5};
  for (int64_t scale = 1; scale <= 100000; scale *= 10) {
    for (int64_t m : kMantissas) {
      const int64_t s = m * scale;
      // interval x s x step_us >= period_us, without overflow
      if (interval * s >= (period_us + step_us - 1) / step_us) return interval * s;
    }
  }
  return interval * 1000000;
}

void Planner::NoteRawBytes(std::string_view name, uint64_t due, uint64_t bytes) {
  auto it = cache_.find(name);  // planned at this step: in the cache
  if (it == cache_.end()) return;
  for (uint64_t bits = it->second.members & due & raw_mask_; bits != 0; bits &= bits - 1) {
    step_raw_bytes_[static_cast<size_t>(std::countr_zero(bits))] += bytes;
  }
}

void Planner::EndSavingStep(uint64_t due) {
  for (uint64_t bits = due & raw_mask_; bits != 0; bits &= bits - 1) {
    const auto i = static_cast<size_t>(std::countr_zero(bits));
    if (raw_bytes_[i] != step_raw_bytes_[i]) quiet_ = {};  // the stretched schedule may change
    raw_bytes_[i] = step_raw_bytes_[i];
    step_raw_bytes_[i] = 0;
  }
}

int64_t Planner::PeriodMicros(size_t i) const {
  const int64_t period_ms = saved_[i]->min_save_period_ms();
  if (period_ms <= 0) return 0;
  const double by_bytes = static_cast<double>(raw_bytes_[i]) / kRawBytesPerSecond * 1e6;
  // At most a day (a bound, not a schedule: StretchedInterval caps the factor too).
  return std::max(period_ms * 1000, static_cast<int64_t>(std::min(by_bytes, 86400e6)));
}

bool Planner::KeptByStretch(size_t i, Mode mode, int64_t mode_step) const {
  const int64_t period_us = PeriodMicros(i);
  if (period_us <= 0 || mode_step < kThinFromStep) return true;
  const int64_t step_us = step_micros(mode);
  if (step_us <= 0) return true;
  const auto& m = saved_[i]->save_config()->mode(mode);  // set: the collection is due here
  if (!m) return true;
  if (std::find(m->save_steps.begin(), m->save_steps.end(), mode_step) != m->save_steps.end()) {
    return true;
  }
  const int64_t stretched = StretchedInterval(m->save_interval, step_us, period_us);
  const int64_t last = last_due_[static_cast<size_t>(mode) - 1][i];
  // (last == mode_step: this step was kept already, and DueMask is asked again)
  return mode_step % stretched == 0 ||
         (last >= 0 && (mode_step - last >= stretched || last == mode_step));
}

namespace {

// The first multiple of k (>= 1) at or after x (>= 0); INT64_MAX if it does not fit.
int64_t FirstMultipleAtOrAfter(int64_t x, int64_t k) {
  const int64_t r = x % k;
  if (r == 0) return x;
  const int64_t add = k - r;
  return x > std::numeric_limits<int64_t>::max() - add ? std::numeric_limits<int64_t>::max()
                                                       : x + add;
}

}  // namespace

int64_t Planner::NextDue(Mode mode, int64_t from) const {
  int64_t best = std::numeric_limits<int64_t>::max();
  const bool eval_like = mode == Mode::kEval || mode == Mode::kPredict;
  const int64_t step_us = step_micros(mode);
  for (size_t i = 0; i < saved_.size(); ++i) {
    const Collection& c = *saved_[i];
    if (eval_like && IsTrainOnlyCollection(c.name())) continue;
    if (!c.save_config()) continue;
    const auto& m = c.save_config()->mode(mode);
    if (!m) continue;
    for (int64_t s : m->save_steps) {
      if (s >= from) best = std::min(best, s);
    }
    const int64_t interval = std::max<int64_t>(m->save_interval, 1);
    const int64_t first = std::max(from, m->start_step);
    int64_t next = FirstMultipleAtOrAfter(first, interval);
    const int64_t period_us = stretches_ ? PeriodMicros(i) : 0;
    if (period_us > 0 && step_us > 0 && next >= kThinFromStep) {
      // From kThinFromStep on, only multiples of the stretched interval (a multiple of
      // interval) are kept.
      const int64_t stretched = StretchedInterval(interval, step_us, period_us);
      const int64_t from_thin = std::max(first, kThinFromStep);
      next = FirstMultipleAtOrAfter(from_thin, stretched);
      // Or `stretched` steps after its last saving step, on its interval (KeptByStretch).
      if (const int64_t last = last_due_[static_cast<size_t>(mode) - 1][i]; last >= 0) {
        const int64_t after = last > std::numeric_limits<int64_t>::max() - stretched
                                  ? std::numeric_limits<int64_t>::max()
                                  : last + stretched;
        next = std::min(next, FirstMultipleAtOrAfter(std::max(from_thin, after), interval));
      }
    }
    if (m->end_step && next >= *m->end_step) continue;
    best = std::min(best, next);
  }
  return best;
}

uint64_t Planner::DueMask(Mode mode, int64_t mode_step) {
  QuietSpan& quiet = quiet_[static_cast<size_t>(mode) - 1];
  if (mode_step >= quiet.from && mode_step < quiet.until) return 0;
  uint64_t due = 0;
  const bool eval_like = mode == Mode::kEval || mode == Mode::kPredict;
  for (size_t i = 0; i < saved_.size(); ++i) {
    const Collection& c = *saved_[i];
    if (eval_like && IsTrainOnlyCollection(c.name())) continue;
    if (c.save_config() && c.save_config()->ShouldSave(mode, mode_step) &&
        (!stretches_ || KeptByStretch(i, mode, mode_step))) {
      due |= uint64_t{1} << i;
      last_due_[static_cast<size_t>(mode) - 1][i] = mode_step;
    }
  }
  if (due == 0) quiet = {mode_step, NextDue(mode, mode_step + 1)};
  return due;
}

const TensorPlan& Planner::Plan(std::string_view name, uint64_t due) {
  auto it = cache_.find(name);
  if (it == cache_.end()) {
    Entry e;
    for (size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i]->Matches(name)) e.members |= uint64_t{1} << i;
    }
    it = cache_.emplace(std::string(name), std::move(e)).first;
  }
  const uint64_t subset = it->second.members & due;
  if (subset == 0) return kNothing;
  for (const auto& [key, plan] : it->second.plans) {
    if (key == subset) return *plan;
  }
  ++plans_built_;
  it->second.plans.emplace_back(subset, std::make_unique<TensorPlan>(Build(name, subset)));
  return *it->second.plans.back().second;
}

void Planner::Forget(std::string_view name) {
  auto it = cache_.find(name);
  if (it != cache_.end()) cache_.erase(it);
}

void Planner::AddToPlan(std::string_view name, const Collection& c, const ReductionConfig& rc,
                        TensorPlan* p) const {
  p->save_raw = p->save_raw || rc.save_raw_tensor;
  p->save_shape = p->save_shape || rc.save_shape;
  if (IsScalarCollection(c.name())) {
    p->tensorboard_scalar = p->tensorboard_scalar || tensorboard_;
    return;
  }
  for (const Reduction& r : rc.All()) {
    if (std::find(p->reductions.begin(), p->reductions.end(), r) == p->reductions.end()) {
      p->reductions.push_back(r);
    }
  }
  if (tensorboard_ && p->histogram_tag.empty() && c.save_histogram() &&
      !IsNonReductionCollection(c.name())) {
    p->histogram_tag = c.name() + "/" + std::string(name);
  }
}

TensorPlan Planner::Build(std::string_view name, uint64_t subset) const {
  TensorPlan p;
  for (uint64_t bits = subset; bits != 0; bits &= bits - 1) {
    const Collection& c = *saved_[static_cast<size_t>(std::countr_zero(bits))];
    AddToPlan(name, c, *c.reduction_config(), &p);
  }
  p.save = p.save_raw || p.save_shape || !p.reductions.empty() || !p.histogram_tag.empty() ||
           p.tensorboard_scalar;
  return p;
}

TensorPlan Planner::PlanWith(std::string_view name, uint64_t due,
                             const std::vector<std::shared_ptr<Collection>>& extra,
                             const ReductionConfig& default_rc) {
  TensorPlan p = Plan(name, due);
  for (const auto& c : extra) {
    ReductionConfig rc = c->reduction_config() ? *c->reduction_config() : default_rc;
    if (IsNonReductionCollection(c->name())) {
      rc = ReductionConfig();
      rc.save_raw_tensor = true;
    }
    AddToPlan(name, *c, rc, &p);
  }
  p.save = p.save_raw || p.save_shape || !p.reductions.empty() || !p.histogram_tag.empty() ||
           p.tensorboard_scalar;
  return p;
}

std::vector<std::string> Planner::SavedCollectionNames() const {
  std::vector<std::string> out;
  for (const auto& c : saved_) out.push_back(c->name());
  return out;
}

void Planner::RecordSeenNames() {
  for (const auto& [name, entry] : cache_) {
    for (uint64_t bits = entry.members; bits != 0; bits &= bits - 1) {
      Collection& c = *saved_[static_cast<size_t>(std::countr_zero(bits))];
      if (c.tensor_names().count(name) == 0) c.AddTensorName(name);
    }
  }
}

}  // namespace trainscope::capture
