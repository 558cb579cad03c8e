// The subcommands of the `trainscope` command. Each Register* function adds one subcommand to
// the CLI11 app; the callback it installs sets *exit_code.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/rule_status.h"
#include "trainscope/rule_params.h"
#include "trainscope/trial.h"

namespace CLI {
class App;
}

namespace trainscope::cli {

// Exit codes of the trainscope command (documented in the README).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;         // an error (message on stderr)
inline constexpr int kExitUsage = 2;           // bad command line
inline constexpr int kExitIssuesFound = 3;     // `run`/`status`: a rule found issues
inline constexpr int kExitStopped = 4;         // `run`: a rule stopped the training
inline constexpr int kExitTrainingFailed = 5;  // `run`: the training command failed
inline constexpr int kExitRuleError = 6;       // `run`: no issues found, but a rule ended in Error
// `run`/`status`: a rule's status file is damaged (empty, not JSON, wrong types); stderr names it.
inline constexpr int kExitUnreadable = 7;
// `run`/`status`: no rule found issues, but the trial is incomplete: a worker lost steps (a full
// disk, an I/O error, steps dropped by the queue policy; <trial>/incomplete_<worker>.json), so
// the rules judged part of the training only. Takes the place of kExitOk and kExitRuleError;
// kExitStopped, kExitTrainingFailed, kExitUnreadable and kExitIssuesFound stay (the summary
// still says the trial is incomplete).
inline constexpr int kExitIncomplete = 8;

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
// The rules' first findings as diagnoses (Diagnose, trainscope/diagnosis.h): the root cause
// first with the findings it explains under it, each cause's explanation and what to do; escaped
// and wrapped for a terminal. Empty when no rule found anything.
std::string RenderDiagnoses(const std::vector<RuleStatusView>& rules);
// The same as the "diagnosis" value of `run --json` and `status --json`: [{"cause": RULE,
// "stage": ..., "step": N or null, "tensor", "explanation", "recommendation", "evidence":
// [{"rule", "step", "tensor", "explanation"}]}].
nlohmann::json DiagnosesJson(const std::vector<RuleStatusView>& rules);
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

// The trial's incomplete markers (ReadIncompleteMarkers); empty when none or the folder cannot
// be listed.
std::vector<IncompleteMarker> IncompleteMarkers(const std::string& trial_dir);
// The markers as the "incomplete" value of `run --json` and `status --json`: null when no worker
// lost steps, else {"steps_lost": failed + dropped over the readable markers, "workers": [{
// "worker", "path", "readable", "problem" (null when readable), "final", "steps_written",
// "steps_failed", "steps_dropped", "first_lost_step", "first_error"}]} (unknown counts null).
nlohmann::json IncompleteJson(const std::vector<IncompleteMarker>& markers);
// The markers in words, escaped for a terminal, one paragraph per worker; empty when none.
std::string DescribeIncomplete(const std::vector<IncompleteMarker>& markers);
// kExitIncomplete in place of kExitOk or kExitRuleError when `incomplete`; else `code`.
int WithIncomplete(int code, bool incomplete);

void RegisterLs(CLI::App& app, int* exit_code);
void RegisterRecover(CLI::App& app, int* exit_code);
void RegisterStatus(CLI::App& app, int* exit_code);
void RegisterRules(CLI::App& app, int* exit_code);
void RegisterRuleWorker(CLI::App& app, int* exit_code);
void RegisterRun(CLI::App& app, int* exit_code);
void RegisterTimeline(CLI::App& app, int* exit_code);

}  // namespace trainscope::cli
