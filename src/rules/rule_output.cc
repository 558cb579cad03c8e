#include "rules/rule_output.h"

#include <nlohmann/json.hpp>

#include "rules/json_util.h"
#include "trainscope/rule_output_format.h"

namespace trainscope::rules_internal {

namespace fmt = rule_output_format;

std::string StatusJson(const RuleState& s, const std::string& trial_path, int64_t now_micros) {
  nlohmann::json j = nlohmann::json::object();
  j["version"] = fmt::kStatusVersion;
  j["rule"] = s.rule;
  j["status"] = std::string(RuleEvaluationStatusName(s.status));
  j["message"] = s.message;
  j["trial"] = trial_path;
  j["finished"] = s.finished;
  j["steps_evaluated"] = s.steps_evaluated;
  j["steps_skipped"] = s.steps_skipped;
  j["last_step"] = s.last_step;
  j["findings"] = s.findings;
  j["suppressed"] = s.suppressed;
  j["first_finding_step"] = s.first_finding_step;
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : s.parameters) params[k] = v;
  j["parameters"] = params;
  j["updated_us"] = now_micros;
  j["updated"] = FormatTimeUtc(now_micros);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

RuleOutput::~RuleOutput() {
  if (events_) events_->Close();
}

Status RuleOutput::Open() {
  TS_RETURN_IF_ERROR(env_->CreateDirs(dir_));
  TS_ASSIGN_OR_RETURN(events_, env_->NewAppendableFile(JoinPath(dir_, fmt::kEventsFile)));
  return Status::OK();
}

Status RuleOutput::WriteStatus(const RuleState& state, const std::string& trial_path,
                               int64_t now_micros) {
  return env_->WriteFileAtomic(JoinPath(dir_, fmt::kStatusFile),
                               StatusJson(state, trial_path, now_micros), /*sync=*/false);
}

Status RuleOutput::AppendEvent(const std::string& json) {
  if (!events_) return Status::Internal("RuleOutput: events file of " + dir_ + " is not open");
  std::string line = json;
  line.push_back('\n');
  TS_RETURN_IF_ERROR(events_->Append(line));
  return events_->Flush();
}

}  // namespace trainscope::rules_internal
