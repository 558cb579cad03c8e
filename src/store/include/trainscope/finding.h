// RuleFinding: what a rule reports (an issue it saw at a step, or a change of the rule's status),
// RuleEvaluationStatus, the states a rule evaluation goes through, named as SageMaker names them,
// and their one JSON codec.
//
// The one definition for every module: rules produce findings (Rule::InvokeAtStep's Verdict) and
// the runner writes them to rule-output/<Rule>/events.jsonl (docs/formats/rule_output.md); the
// actions take them as they are (the event log, the stop signal, webhooks, email, Prometheus;
// docs/formats/event_log.md); the supervisor's MetricsFeed and the profiler's timeline merger read
// them back. It lives in store because events.jsonl is part of the trial folder (the folder's
// names: rule_output_format.h), and store is the lowest module all of them link.
//
// A RuleFinding is a plain value: copy it freely; distinct objects may be used from distinct
// threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/modes.h"
#include "trainscope/status.h"
#include "trainscope/time_format.h"  // FormatTimeUtc, for the users of findings

namespace trainscope {

// SageMaker's RuleEvaluationStatus values (reference smdebug.md 5.1), less "Stopping".
enum class RuleEvaluationStatus : int {
  kInProgress = 0,     // evaluating; nothing found yet
  kIssuesFound = 1,    // the rule's condition was met at least once
  kNoIssuesFound = 2,  // the data ended and the condition was never met
  kError = 3,          // the rule could not run (bad parameter, crash, unreadable data)
  kStopped = 4,        // stopped before the data ended, nothing found
};

inline constexpr RuleEvaluationStatus kAllRuleEvaluationStatuses[] = {
    RuleEvaluationStatus::kInProgress, RuleEvaluationStatus::kIssuesFound,
    RuleEvaluationStatus::kNoIssuesFound, RuleEvaluationStatus::kError,
    RuleEvaluationStatus::kStopped};

// "InProgress", "IssuesFound", "NoIssuesFound", "Error", "Stopped".
std::string_view RuleEvaluationStatusName(RuleEvaluationStatus status);
// Inverse of RuleEvaluationStatusName, ignoring case. nullopt for anything else.
std::optional<RuleEvaluationStatus> RuleEvaluationStatusFromName(std::string_view name);

enum class FindingKind : int {
  kFinding = 0,       // the rule's condition was met (at `step`, on `tensor`, ...)
  kStatusChange = 1,  // the rule's status became `status` (e.g. NoIssuesFound at the end)
};

// "finding" or "status".
std::string_view FindingKindName(FindingKind kind);

struct RuleFinding {
  FindingKind kind = FindingKind::kFinding;
  std::string rule;  // rule name, e.g. "VanishingGradient"
  // The rule's status after this event: IssuesFound for every kFinding.
  RuleEvaluationStatus status = RuleEvaluationStatus::kIssuesFound;
  int64_t step = -1;                // global step; -1: not tied to a step
  std::optional<Mode> mode;         // the step's mode, when known
  int64_t mode_step = -1;           // the step in its mode; -1: unknown
  std::string tensor;               // the tensor concerned; empty for a rule-level finding
  std::optional<double> value;      // the observed value that tripped the rule (may be NaN or inf)
  std::optional<double> threshold;  // what it was compared with
  std::string condition;            // the comparison, e.g. "abs_mean < threshold"
  std::string explanation;          // one line: what was seen and why it matters
  std::string recommendation;       // what to change in the model or the training
  std::string trial;                // the trial's path
  bool stop_training = false;       // the rule asks for the training to be stopped
  int64_t time_micros = 0;  // when it was found, microseconds since the Unix epoch; 0: unset

  // A status change of `rule` to `status`, with an optional explanation.
  static RuleFinding StatusChange(std::string rule, RuleEvaluationStatus status,
                                  std::string explanation = "");
};

// Which keys RuleFindingToJson writes (of those that are set).
enum class FindingKeys {
  // Every key: a line of rule-output/<Rule>/events.jsonl (rule_output.md).
  kAll,
  // The finding as the actions publish it, in the event log and the notifiers' payloads
  // (event_log.md): without the keys only rule-output has (mode_step, condition, trial,
  // stop_training).
  kActions,
};

// One JSON object on one line, no newline. Keys: kind ("finding" or "status"), rule, status,
// step, mode, mode_step, tensor, value, threshold, condition, explanation, recommendation, trial,
// stop_training, time_us, time (UTC). Non-finite numbers are the strings "NaN", "Infinity",
// "-Infinity" (JSON has no such numbers); absent fields (empty, -1, unset, false, time 0) are
// omitted. Keys are in alphabetical order.
std::string RuleFindingToJson(const RuleFinding& finding, FindingKeys keys = FindingKeys::kAll);
// Parses RuleFindingToJson's output (either key set). Unknown keys are ignored; "rule" and
// "status" are required. InvalidArgument naming the key when one is missing or has the wrong
// type or value.
Result<RuleFinding> RuleFindingFromJson(std::string_view json);
// Parses one line of rule-output/<rule>/events.jsonl as RuleFindingFromJson does, except that the
// folder stands for what a line leaves out: a line without "rule" is `rule`'s, one without
// "status" is IssuesFound (the one status of a finding line). For the readers of a rule's folder.
Result<RuleFinding> RuleFindingFromEventsLine(std::string_view line, std::string_view rule);

// One human line for chat messages, subjects and logs, e.g.
// "VanishingGradient: IssuesFound at step 400 (TRAIN) on gradients/fc1.weight: value 1e-09,
// threshold 1e-07. <explanation>"
std::string DescribeFinding(const RuleFinding& finding);
// A value or threshold as DescribeFinding writes it: "%.6g", and "NaN", "inf", "-inf".
std::string FindingNumber(double v);

}  // namespace trainscope
