#include "trainscope/rule.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "trainscope/rule_data.h"

namespace trainscope {

namespace {

// The steps a request saves, as the hook's SaveConfigMode::ShouldSave judges them.
bool RequestSaves(const CollectionRequest& r, int64_t step) {
  if (std::binary_search(r.save_steps.begin(), r.save_steps.end(), step)) return true;
  return step >= r.start_step && (r.end_step < 0 || step < r.end_step) && r.save_interval > 0 &&
         step % r.save_interval == 0;
}

// Sets `m`'s schedule to one that saves every step any of `group` saves. False if it cannot
// within kMaxMergedSaveSteps listed steps (the caller falls back).
bool MergeSchedules(const std::vector<const CollectionRequest*>& group, CollectionRequest* m) {
  bool any_unbounded = false;
  int64_t interval = 0;
  int64_t start = std::numeric_limits<int64_t>::max();
  for (const auto* r : group) {
    if (r->end_step >= 0) continue;
    any_unbounded = true;
    interval = std::gcd(interval, std::max<int64_t>(r->save_interval, 1));
    start = std::min(start, r->start_step);
  }
  if (!any_unbounded) return false;
  m->save_interval = interval;
  m->start_step = start;
  m->end_step = -1;
  m->save_steps.clear();
  std::vector<int64_t> extra;
  auto add = [&](int64_t step) {
    if (RequestSaves(*m, step)) return true;
    extra.push_back(step);
    return extra.size() <= kMaxMergedSaveSteps;
  };
  for (const auto* r : group) {
    for (int64_t step : r->save_steps) {
      if (!add(step)) return false;
    }
    // An interval that is a multiple of the base one, from a later start, adds nothing.
    const int64_t every = std::max<int64_t>(r->save_interval, 1);
    if (every % interval == 0 && r->start_step >= start) continue;
    if (r->end_step < 0) return false;  // unreachable: unbounded ones made the base
    const int64_t first = (r->start_step + every - 1) / every * every;
    for (int64_t step = first; step < r->end_step; step += every) {
      if (!add(step)) return false;
    }
  }
  std::sort(extra.begin(), extra.end());
  extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
  m->save_steps = std::move(extra);
  return true;
}

}  // namespace

std::vector<CollectionRequest> MergeCollectionRequests(
    const std::vector<CollectionRequest>& requests) {
  std::vector<std::vector<const CollectionRequest*>> groups;
  for (const auto& r : requests) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.front()->name == r.name; });
    if (it == groups.end()) {
      groups.push_back({&r});
    } else {
      it->push_back(&r);
    }
  }
  auto add_unique = [](std::vector<std::string>& into, const std::vector<std::string>& from) {
    for (const auto& s : from) {
      if (std::find(into.begin(), into.end(), s) == into.end()) into.push_back(s);
    }
  };
  std::vector<CollectionRequest> out;
  for (const auto& group : groups) {
    CollectionRequest m = *group.front();
    for (size_t i = 1; i < group.size(); ++i) {
      const CollectionRequest& r = *group[i];
      add_unique(m.include_regex, r.include_regex);
      add_unique(m.reductions, r.reductions);
      m.save_raw_tensor = m.save_raw_tensor || r.save_raw_tensor;
      m.train_only = m.train_only && r.train_only;
    }
    if (group.size() > 1 && !MergeSchedules(group, &m)) {
      // The smallest interval (a divisor of every one) over the widest range.
      m = CollectionRequest{m.name,       m.include_regex,   0,  0,           0,
                            m.reductions, m.save_raw_tensor, {}, m.train_only};
      m.start_step = std::numeric_limits<int64_t>::max();
      std::vector<int64_t> steps;
      for (const auto* r : group) {
        m.save_interval = std::gcd(m.save_interval, std::max<int64_t>(r->save_interval, 1));
        m.start_step = std::min(m.start_step, r->start_step);
        if (m.end_step >= 0) m.end_step = r->end_step < 0 ? -1 : std::max(m.end_step, r->end_step);
        steps.insert(steps.end(), r->save_steps.begin(), r->save_steps.end());
      }
      std::sort(steps.begin(), steps.end());
      steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
      m.save_steps = std::move(steps);
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::string DescribeSaveSchedule(const CollectionRequest& r) {
  std::string s =
      r.save_interval == 1 ? "every step" : "every " + std::to_string(r.save_interval) + " steps";
  if (r.start_step > 0) s += " from step " + std::to_string(r.start_step);
  if (r.end_step >= 0) s += " before step " + std::to_string(r.end_step);
  if (r.train_only) s += ", in training steps only";
  if (r.save_steps.empty()) return s;
  s += r.save_steps.size() > 1 ? ", and steps " : ", and step ";
  for (size_t i = 0; i < r.save_steps.size();) {
    size_t j = i;
    while (j + 1 < r.save_steps.size() && r.save_steps[j + 1] == r.save_steps[j] + 1) ++j;
    if (i > 0) s += ", ";
    s += std::to_string(r.save_steps[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(r.save_steps[j]);
    }
    i = j + 1;
  }
  return s;
}

std::string CollectionRequestsToHookJson(const std::vector<CollectionRequest>& requests) {
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
    return s;
  };
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : MergeCollectionRequests(requests)) {
    nlohmann::json p = nlohmann::json::object();
    if (!r.include_regex.empty()) p["include_regex"] = join(r.include_regex);
    p["save_interval"] = std::to_string(r.save_interval);
    if (r.start_step > 0) p["start_step"] = std::to_string(r.start_step);
    if (r.end_step >= 0) p["end_step"] = std::to_string(r.end_step);
    if (!r.save_steps.empty()) {
      std::string steps;
      for (size_t i = 0; i < r.save_steps.size(); ++i) {
        if (i > 0) steps += ',';
        steps += std::to_string(r.save_steps[i]);
      }
      p["save_steps"] = steps;
    }
    if (r.train_only) {  // smdebug's per-mode keys; end_step 0 saves nothing
      p["eval.end_step"] = "0";
      p["predict.end_step"] = "0";
    }
    if (!r.reductions.empty()) {
      p["reductions"] = join(r.reductions);
      p["save_raw_tensor"] = r.save_raw_tensor ? "true" : "false";
    }
    arr.push_back({{"CollectionName", r.name}, {"CollectionParameters", p}});
  }
  return arr.dump();
}

Rule::Rule(std::string name) : name_(std::move(name)) {}
Rule::~Rule() = default;

Status Rule::Bind(RuleData* data) {
  if (data == nullptr) return Status::InvalidArgument("Rule::Bind: null RuleData for " + name_);
  data_ = data;
  return OnBind();
}

Status Rule::OnBind() { return Status::OK(); }
Status Rule::SetRequiredTensors(int64_t, RequiredTensors&) { return Status::OK(); }
Result<Verdict> Rule::OnTick(int64_t) { return Verdict::NotMet(); }
Result<Verdict> Rule::Finish(int64_t) { return Verdict::NotMet(); }
std::vector<CollectionRequest> Rule::RequiredCollections() const { return {}; }
RuleParams Rule::Parameters() const { return {}; }
size_t Rule::StateBytes() const { return 0; }
std::string Rule::StatusNote() const { return {}; }

RuleFinding Rule::NewFinding(int64_t step) const {
  RuleFinding f;
  f.rule = name_;
  f.step = step;
  if (data_ != nullptr) {
    f.trial = data_->trial(0).path();
    if (step >= 0) {
      auto [mode, mode_step] = data_->StepMode(step);
      f.mode = mode;
      f.mode_step = mode_step;
    }
  }
  return f;
}

}  // namespace trainscope
