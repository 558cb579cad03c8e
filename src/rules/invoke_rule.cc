// InvokeRule: smdebug's invoke_rule loop (reference smdebug.md 5.1) in C++.
#include <chrono>

#include "rules/rule_eval.h"
#include "rules/step_cursor.h"
#include "trainscope/rule_runner.h"

namespace trainscope {

Result<InvokeRuleResult> InvokeRule(Rule& rule, RuleData& data, InvokeRuleOptions options) {
  if (!rule.bound()) {
    return Status::InvalidArgument("InvokeRule: rule " + rule.name() +
                                   " is not bound; call rule.Bind(&data) first");
  }
  constexpr size_t kMaxKeptFindings = 1000;
  InvokeRuleResult result;
  Trial& trial = data.trial(0);
  rules_internal::StepCursor cursor(&trial, options.start_step,
                                    options.end_step ? *options.end_step : -1);
  auto waited_since = std::chrono::steady_clock::now();
  while (true) {
    int64_t step = -1;
    auto state = cursor.Next(&step);
    if (state == rules_internal::StepCursor::State::kDone) break;  // NoMoreData or end_step
    if (state == rules_internal::StepCursor::State::kWait) {
      if (std::chrono::steady_clock::now() - waited_since > options.max_wait) {
        return Status::Unavailable("InvokeRule: rule " + rule.name() + " waited more than " +
                                   std::to_string(options.max_wait.count()) + " ms for step " +
                                   std::to_string(cursor.next()) + " of " + trial.path());
      }
      Status s = trial.WaitForChange(options.wait_timeout);
      if (!s.ok() && s.code() != StatusCode::kUnavailable) return s;
      continue;
    }
    waited_since = std::chrono::steady_clock::now();
    cursor.Advance(step);
    Result<Verdict> verdict = EvaluateRuleAtStep(rule, data, step);
    if (!verdict.ok()) {
      if (rules_internal::IsNoData(verdict.status())) continue;  // smdebug swallows these
      return verdict.status().WithContext("rule " + rule.name() + " at step " +
                                          std::to_string(step));
    }
    ++result.steps_evaluated;
    result.last_step = step;
    if (verdict->condition_met) {
      if (!result.condition_met) result.first_met_step = step;
      result.condition_met = true;
      for (auto& f : verdict->findings) {
        ++result.findings_total;
        if (f.step < 0) f.step = step;
        if (result.findings.size() < kMaxKeptFindings) result.findings.push_back(f);
      }
      if (verdict->findings.empty()) ++result.findings_total;
      if (options.raise_eval_cond) return result;
    }
    if (verdict->end_of_rule) break;
  }
  return result;
}

}  // namespace trainscope
