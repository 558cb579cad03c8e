#include "rules/rule_eval.h"

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
