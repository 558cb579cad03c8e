// Rule specifications on the command line:
//   NAME[:KEY=VALUE[,KEY=VALUE...]][@ACTIONS]
// e.g. "DeadRelu:threshold_layer=40", "LossNotDecreasing:num_steps=20@stop",
// "AllZero:collection_names=weights,biases,threshold=90" (a token without '=' continues the
// previous value, so smdebug's comma-separated lists need no quoting). ACTIONS is an action spec
// (docs/actions.md) applied to this rule's findings only.
// A rules file (--rules-config) is JSON: [{"name": "...", "parameters": {...}, "actions": "..."}].
#pragma once

#include <string>
#include <vector>

#include "trainscope/rule.h"
#include "trainscope/status.h"

namespace trainscope::cli {

struct RuleSpec {
  std::string name;
  RuleParams params;
  std::string actions;  // action spec for this rule only; may be empty
  std::string text;     // as written
  // A custom Python rule (--rule-file FILE.py:CLASS, cli/python_rule.h): its file; the name is
  // the class. Empty for a built-in rule.
  std::string python_file;
};

Result<RuleSpec> ParseRuleSpec(const std::string& text);
// Reads a rules file (JSON, see above).
Result<std::vector<RuleSpec>> ReadRulesFile(const std::string& path);
// The canonical string form: NAME:k=v,k=v@actions (round-trips through ParseRuleSpec); for a
// custom Python rule FILE.py:CLASS:k=v@actions (round-trips through ParsePythonRuleSpec).
std::string FormatRuleSpec(const RuleSpec& spec);
// `--rules default`: the set run when nothing else is asked for; `all`: every built-in rule that
// needs no extra input (no other trials, no labels).
std::vector<std::string> DefaultRuleNames();

}  // namespace trainscope::cli
