// The registry of rules that can be created by name with string parameters: every built-in
// debugging rule (docs/rules/<Rule>.md), and any rule a program registers.
//
// Thread safety: all functions are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/rule.h"
#include "trainscope/rule_params.h"
#include "trainscope/status.h"

namespace trainscope {

// What a rule is, for `trainscope rules` and the Python wrappers.
struct RuleInfo {
  std::string name;
  std::string summary;  // one line
  // "debugging" (reads tensors, evaluated per step) or "profiler" (reads system metrics and the
  // framework timeline, evaluated on the runner's clock as they arrive).
  std::string kind = "debugging";
  std::vector<ParamSpec> params;
  // The collections it needs with default parameters.
  std::vector<CollectionRequest> default_collections;
};

using RuleFactory = std::function<Result<std::unique_ptr<Rule>>(const RuleParams& params)>;

// Creates a rule by name. NotFound listing the known rules for an unknown name; InvalidArgument
// for a bad or unknown parameter (the message lists the valid ones).
Result<std::unique_ptr<Rule>> CreateRule(const std::string& name, const RuleParams& params = {});
// Every registered rule name, sorted.
std::vector<std::string> RuleNames();
// NotFound for an unknown name.
Result<RuleInfo> DescribeRule(const std::string& name);
// Registers (or replaces) a rule. `info.name` is its name.
void RegisterRule(RuleInfo info, RuleFactory factory);

}  // namespace trainscope
