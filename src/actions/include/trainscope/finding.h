// Finding: what a rule reports (an issue at a step, or a change of the rule's status), and
// RuleStatus, the states a rule evaluation goes through, named as SageMaker names them.
//
// A Finding is a plain value: copy it freely; distinct objects may be used from distinct threads.
// Its JSON form (FindingToJson) is what the event log, the stop signal, webhooks and the Python
// side exchange; docs/formats/event_log.md lists its keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/modes.h"
#include "trainscope/status.h"
#include "trainscope/time_format.h"  // FormatTimeUtc, for the users of findings

namespace trainscope {

// SageMaker's RuleEvaluationStatus values (smdebug.md 5.1), less "Stopping".
enum class RuleStatus : int {
  kInProgress = 0,     // evaluating; nothing found yet
  kIssuesFound = 1,    // the rule's condition was met at least once
  kNoIssuesFound = 2,  // training ended and the condition was never met
  kError = 3,          // the rule could not run (no data, a bad parameter, a crash)
  kStopped = 4,        // the rule was stopped before training ended
};

inline constexpr RuleStatus kAllRuleStatuses[] = {RuleStatus::kInProgress, RuleStatus::kIssuesFound,
                                                  RuleStatus::kNoIssuesFound, RuleStatus::kError,
                                                  RuleStatus::kStopped};

// "InProgress", "IssuesFound", "NoIssuesFound", "Error", "Stopped".
std::string_view RuleStatusName(RuleStatus status);
// Inverse of RuleStatusName, ignoring case. nullopt for anything else.
std::optional<RuleStatus> RuleStatusFromName(std::string_view name);

enum class FindingKind : int {
  kFinding = 0,       // the rule's condition was met (at `step`, on `tensor`, ...)
  kStatusChange = 1,  // the rule's status became `status` (e.g. NoIssuesFound at the end)
};

// "finding" or "status".
std::string_view FindingKindName(FindingKind kind);

struct Finding {
  FindingKind kind = FindingKind::kFinding;
  std::string rule;                              // rule name, e.g. "VanishingGradient"
  RuleStatus status = RuleStatus::kIssuesFound;  // the rule's status after this event
  int64_t step = -1;                             // -1: not tied to a step
  std::optional<Mode> mode;                      // the step's mode, when known
  std::string tensor;                            // the tensor concerned; may be empty
  std::optional<double> value;                   // the observed value (may be NaN or inf)
  std::optional<double> threshold;               // the limit it was compared with
  std::string explanation;     // one line: what was seen, e.g. "gradient norm 1e-9 < 1e-7"
  std::string recommendation;  // one concrete thing to try
  int64_t time_micros = 0;     // wall clock, microseconds since the Unix epoch; 0: unset

  // A status change of `rule` to `status`, with an optional explanation.
  static Finding StatusChange(std::string rule, RuleStatus status, std::string explanation = "");
};

// One line of JSON (no newline). Non-finite value/threshold are written as the strings "NaN",
// "Infinity", "-Infinity" (JSON has no such numbers); absent fields are omitted.
std::string FindingToJson(const Finding& finding);
// Parses FindingToJson's output. Unknown keys are ignored; "rule" and "status" are required.
// InvalidArgument naming the key when a field has the wrong type or value.
Result<Finding> FindingFromJson(std::string_view json);

// One human line for chat messages, subjects and logs, e.g.
// "VanishingGradient: IssuesFound at step 400 (TRAIN) on gradients/fc1.weight: value 1e-09,
// threshold 1e-07. <explanation>"
std::string FindingSummary(const Finding& finding);

// FormatTimeUtc, the trial's UTC time stamps: trainscope/time_format.h (core).

}  // namespace trainscope
