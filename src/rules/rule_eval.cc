#include "rules/rule_eval.h"

#include <exception>

#include "trainscope/rule_runner.h"

namespace trainscope::rules_internal {

Status Prefetch(RuleData& data, const RequiredTensors& req) {
  for (const auto& r : req.requests()) {
    if (r.trial >= data.num_trials()) {
      return Status::InvalidArgument("required tensor " + r.name + ": no trial " +
                                     std::to_string(r.trial) + " (open it with OpenTrial)");
    }
    Trial& t = data.trial(r.trial);
    std::vector<std::string> names;
    if (r.should_match_regex) {
      TS_ASSIGN_OR_RETURN(names, t.TensorNames(Mode::kGlobal, std::nullopt, r.name));
    } else {
      if (!t.HasTensor(r.name)) {
        return Status::NotFound("required tensor " + r.name + " does not exist in " + t.path());
      }
      names.push_back(r.name);
    }
    for (const auto& name : names) {
      for (int64_t step : r.steps) {
        auto v = data.Value(name, step, r.trial);
        if (!v.ok()) return v.status();
      }
    }
  }
  return Status::OK();
}

}  // namespace trainscope::rules_internal

namespace trainscope {

Result<Verdict> EvaluateRuleAtStep(Rule& rule, RuleData& data, int64_t step) {
  try {
    data.BeginStep(step);
    RequiredTensors req;
    TS_RETURN_IF_ERROR(rule.SetRequiredTensors(step, req));
    TS_RETURN_IF_ERROR(rules_internal::Prefetch(data, req));
    return rule.InvokeAtStep(step);
  } catch (const std::exception& e) {
    return Status::Internal("rule " + rule.name() + " threw at step " + std::to_string(step) +
                            ": " + e.what());
  } catch (...) {
    return Status::Internal("rule " + rule.name() + " threw a non-standard exception at step " +
                            std::to_string(step));
  }
}

}  // namespace trainscope
