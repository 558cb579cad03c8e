// Reads rule-output/<Rule>/status.json and the first finding of events.jsonl, for `run`'s live
// view and summary and for `status`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainscope::cli {

struct RuleStatusView {
  std::string rule;
  std::string status = "InProgress";  // SageMaker's names
  std::string message;
  int64_t last_step = -1;
  int64_t findings = 0;
  int64_t first_finding_step = -1;
  bool finished = false;
  nlohmann::json first_finding;  // null when none; the events.jsonl line
  nlohmann::json raw;            // status.json as read
};

// Every rule folder under <trial>/rule-output, sorted by rule name. Folders whose status.json
// is missing or unreadable (being replaced) appear with status "InProgress" and empty fields.
std::vector<RuleStatusView> ReadRuleStatuses(const std::string& trial_dir);
// The JSON in `path`; nullopt when it cannot be read or parsed (e.g. being replaced).
std::optional<nlohmann::json> ReadJsonFile(const std::string& path);
// The stop request written by a stop action, if any (rule-output/stop_training.json).
std::optional<nlohmann::json> ReadStopRequest(const std::string& trial_dir);

}  // namespace trainscope::cli
