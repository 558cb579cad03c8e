// Reads rule-output/<Rule>/status.json and the first finding of events.jsonl, for `run`'s live
// view and summary and for `status`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::cli {

// The status shown for a rule whose status.json cannot be read (RuleStatusView::error says why).
inline constexpr const char* kStatusUnreadable = "Unreadable";

struct RuleStatusView {
  std::string rule;
  std::string status = "InProgress";  // SageMaker's names, or kStatusUnreadable
  std::string message;
  int64_t last_step = -1;
  int64_t findings = 0;
  int64_t first_finding_step = -1;
  bool finished = false;
  nlohmann::json first_finding;  // null when none; the events.jsonl line
  nlohmann::json raw;            // status.json as read
  // Non-empty when status.json is present but damaged: "<path>: <what is wrong>" (empty,
  // not JSON with its line and column, not an object, a key of the wrong type).
  std::string error;
};

// Every rule folder under <trial>/rule-output, sorted by rule name. A folder whose status.json
// does not exist yet (the rule is starting) appears as "InProgress" with empty fields; one whose
// status.json is damaged appears as kStatusUnreadable with `error` set. (status.json is replaced
// atomically, so a reader never sees a file half written by a rule.)
std::vector<RuleStatusView> ReadRuleStatuses(const std::string& trial_dir);
// The JSON in `path`; nullopt when it cannot be read or parsed (e.g. being replaced).
std::optional<nlohmann::json> ReadJsonFile(const std::string& path);
// The stop request, if any, as StopSignal::Read gives it (stop_signal.h: the trial's stop file, or
// smdebug's when SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE is set; a file without a reason reads as
// "source": "unknown"), in the stop file's JSON (docs/formats/stop_signal.md).
std::optional<nlohmann::json> ReadStopRequest(const std::string& trial_dir);

// j[key] when j is an object and j[key] has that type, else `fallback`: data from files is read
// with these, never with nlohmann's value(), which throws on a key of another type.
std::string JsonString(const nlohmann::json& j, const char* key, const std::string& fallback = "");
int64_t JsonInt(const nlohmann::json& j, const char* key, int64_t fallback);
// JSON text for output: invalid UTF-8 in trial data is replaced (U+FFFD), never an exception.
std::string DumpJson(const nlohmann::json& j);

}  // namespace trainscope::cli
