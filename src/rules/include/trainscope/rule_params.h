// Rule parameters: declared once per rule (name, type, default, one line of help), parsed from
// the strings SageMaker passes (RuleParameters), with unknown names rejected by a message that
// lists the valid ones.
//
// Accepted spellings: numbers as C/Python write them ("1e-7", "0.1", "10"); booleans "True",
// "true", "1", "False", "false", "0"; "None" or "" for an optional value left unset; lists as
// "a,b", "[a, b]" or "['a', 'b']" (brackets, quotes and spaces around items are dropped).
//
// Thread safety: ParamSpec lists are immutable values; ParsedParams is a value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/rule.h"
#include "trainscope/status.h"

namespace trainscope {

enum class ParamType { kDouble, kInt, kBool, kString, kStringList, kDoubleList };

struct ParamSpec {
  std::string name;
  ParamType type;
  std::string default_value;  // as a string; "None" = unset
  std::string help;           // one line
};

// Parsed parameters of one rule. Getters REQUIRE a name declared in the specs with that type.
class ParsedParams {
 public:
  double Double(const std::string& name) const;
  std::optional<double> OptDouble(const std::string& name) const;  // nullopt for "None"
  int64_t Int(const std::string& name) const;
  std::optional<int64_t> OptInt(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& String(const std::string& name) const;  // "" for None
  bool IsSet(const std::string& name) const;                 // not None / empty
  std::vector<std::string> StringList(const std::string& name) const;
  std::vector<double> DoubleList(const std::string& name) const;
  // Every declared parameter with its effective value as a string.
  const RuleParams& effective() const { return effective_; }

 private:
  friend Result<ParsedParams> ParseRuleParams(const std::string& rule,
                                              const std::vector<ParamSpec>& specs,
                                              const RuleParams& given);
  RuleParams effective_;
  std::map<std::string, double> doubles_;
  std::map<std::string, int64_t> ints_;
  std::map<std::string, bool> bools_;
  std::map<std::string, std::vector<std::string>> lists_;
  std::map<std::string, std::vector<double>> double_lists_;
};

// Parses `given` against `specs`. InvalidArgument naming the rule and the parameter when a name is
// unknown ("unknown parameter 'threshhold' for rule VanishingGradient; valid parameters:
// threshold") or a value does not parse.
Result<ParsedParams> ParseRuleParams(const std::string& rule, const std::vector<ParamSpec>& specs,
                                     const RuleParams& given);

// Splits a list value: "a,b" / "[a, b]" / "['a','b']" -> {"a", "b"}. "None" and "" give {}.
std::vector<std::string> SplitParamList(const std::string& value);

}  // namespace trainscope
