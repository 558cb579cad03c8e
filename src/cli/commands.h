// The subcommands of the `trainscope` command. Each Register* function adds one subcommand to
// the CLI11 app; the callback it installs sets *exit_code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/rule_status.h"
#include "trainscope/rule_params.h"

namespace CLI {
class App;
}

namespace trainscope::cli {

// Exit codes of the trainscope command (documented in the README).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // an error (message on stderr)
inline constexpr int kExitUsage = 2;         // bad command line
inline constexpr int kExitIssuesFound = 3;   // `run`/`status`: a rule found issues
inline constexpr int kExitStopped = 4;       // `run`: a rule stopped the training
inline constexpr int kExitTrainingFailed = 5;  // `run`: the training command failed
inline constexpr int kExitRuleError = 6;  // `run`: no issues found, but a rule ended in Error
// `run`/`status`: a rule's status file is damaged (empty, not JSON, wrong types); stderr names it.
inline constexpr int kExitUnreadable = 7;

// Shared by `run` and `status`.
// kExitUnreadable if a rule's status file is damaged, else kExitIssuesFound if a rule found
// issues, else kExitRuleError if one is in Error, else kExitOk.
int RulesExitCode(const std::vector<RuleStatusView>& rules);
// A rule parameter's string value (as SageMaker passes it, as status.json keeps it) as the JSON
// value its declared type means: numbers, booleans, lists, null for "None" (and for "" as a
// string); the string itself where it does not parse as its type.
nlohmann::json TypedParamValue(ParamType type, const std::string& value);
// "number", "integer", "boolean", "string", "list of strings", "list of numbers".
const char* ParamTypeName(ParamType type);
// The statuses as JSON; rule parameters typed by the rule's declaration (numbers, booleans,
// lists, null for "None"); a damaged status file as status "Unreadable" with its "error".
nlohmann::json StatusesJson(const std::vector<RuleStatusView>& rules);
// The statuses as a table (escaped, long messages wrapped to the terminal or 100 columns).
std::string RenderStatusTable(const std::vector<RuleStatusView>& rules);
// The trial's last saved global step (with show_incomplete), and whether its training ended;
// nullopt when the folder holds no step (or no readable trial).
struct LastStep {
  int64_t step = -1;
  bool training_ended = false;
};
std::optional<LastStep> LastSavedStep(const std::string& trial_dir);
// The stop request of the trial at `trial_dir` in words, escaped for a terminal: which rule
// asked at which step and why, and at which step the training actually stopped (its last saved
// step) with why the two differ.
std::string DescribeStop(const nlohmann::json& stop, const std::string& trial_dir);

void RegisterLs(CLI::App& app, int* exit_code);
void RegisterStatus(CLI::App& app, int* exit_code);
void RegisterRules(CLI::App& app, int* exit_code);
void RegisterRuleWorker(CLI::App& app, int* exit_code);
void RegisterRun(CLI::App& app, int* exit_code);
void RegisterTimeline(CLI::App& app, int* exit_code);

}  // namespace trainscope::cli
