// Custom Python rules: `trainscope run --rule-file FILE.py:CLASS[:KEY=VALUE,...][@ACTIONS]`.
//
// The class is written against smdebug's Rule API (trainscope.rules.Rule). It is evaluated in a
// Python process of its own (python/trainscope/rules/custom.py, "serve"), which the rule's worker
// (`trainscope rule-worker --rule-file`) starts and drives one complete global step at a time
// through PythonRule, a trainscope::Rule: so the runner gives a custom rule the statuses,
// status.json, events.jsonl, actions (stop included) and time-outs of a built-in one. The Python
// process is in the worker's process group (the supervisor's SIGKILL at --rules-timeout reaches
// it), ignores SIGTERM (a rule stuck in invoke_at_step is reported as one that overran the
// time-out) and is killed when its worker dies (PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/rule_spec.h"
#include "trainscope/rule.h"
#include "trainscope/status.h"

namespace trainscope::cli {

// Parses FILE.py:CLASS[:KEY=VALUE,...][@ACTIONS]: python_file = FILE.py, name = CLASS, the
// parameters and actions as ParseRuleSpec reads them. InvalidArgument naming the spec and the
// form when there is no ".py:" or no class name.
Result<RuleSpec> ParsePythonRuleSpec(const std::string& text);

// The Python interpreter that runs custom rules: $TRAINSCOPE_PYTHON when set, else the training
// command's own interpreter (its first word when that is python, python3, python3.11 ... or a
// path to one), else "python3" from PATH. It must import trainscope.
std::string ResolvePython(const std::vector<std::string>& command);

// Checks a custom rule before the training starts (custom.py "check"): the file imports, the
// class exists and is a Rule subclass, the parameters are its constructor's. Returns the
// parameters in effect, defaults included, as strings. InvalidArgument starting with
// "--rule-file SPEC: " and saying what to do; also when `python` cannot run trainscope.
Result<RuleParams> CheckPythonRule(const std::string& python, const RuleSpec& spec);

// A custom rule as the runner sees it. Thread safety: one thread, as every Rule.
class PythonRule : public Rule {
 public:
  // REQUIRES: !spec.python_file.empty(). `parameters`: what CheckPythonRule returned (shown in
  // status.json until the Python process reports its own).
  PythonRule(std::string python, RuleSpec spec, RuleParams parameters);
  ~PythonRule() override;

  Result<Verdict> InvokeAtStep(int64_t step) override;
  RuleParams Parameters() const override { return parameters_; }

 protected:
  // Starts the Python process on the bound trial and waits for it to create the rule.
  Status OnBind() override;

 private:
  Result<std::string> Call(const std::string& request, int64_t step);
  Status Ended(const std::string& doing);

  std::string python_;
  RuleSpec spec_;
  RuleParams parameters_;
  pid_t pid_ = -1;
  int fd_ = -1;  // our end of the socket pair (the child's stdin and stdout)
  std::string buffer_;
};

}  // namespace trainscope::cli
