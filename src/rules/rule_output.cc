#include "rules/rule_output.h"

#include <nlohmann/json.hpp>

#include "rules/json_util.h"
#include "trainscope/rule_output_format.h"

namespace trainscope {

namespace fmt = rule_output_format;

std::string RuleStateToJson(const RuleState& s, const std::string& trial_path, int64_t now_micros) {
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

Result<RuleState> RuleStateFromJson(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Status::InvalidArgument("status.json: not a JSON object");
  RuleState s;
  auto wrong = [](const char* key, const char* type) {
    return Status::InvalidArgument(std::string("status.json: \"") + key + "\" is not " + type);
  };
  auto str = [&](const char* key, std::string* out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return Status::OK();
    if (!it->is_string()) return wrong(key, "a string");
    *out = it->get<std::string>();
    return Status::OK();
  };
  auto integer = [&](const char* key, int64_t* out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return Status::OK();
    if (!it->is_number_integer()) return wrong(key, "an integer");
    *out = it->get<int64_t>();
    return Status::OK();
  };
  TS_RETURN_IF_ERROR(str("rule", &s.rule));
  std::string status;
  TS_RETURN_IF_ERROR(str("status", &status));
  if (!status.empty()) {
    auto parsed = RuleEvaluationStatusFromName(status);
    if (!parsed) return wrong("status", "a status name");
    s.status = *parsed;
  }
  TS_RETURN_IF_ERROR(str("message", &s.message));
  TS_RETURN_IF_ERROR(integer("steps_evaluated", &s.steps_evaluated));
  TS_RETURN_IF_ERROR(integer("steps_skipped", &s.steps_skipped));
  TS_RETURN_IF_ERROR(integer("last_step", &s.last_step));
  TS_RETURN_IF_ERROR(integer("findings", &s.findings));
  TS_RETURN_IF_ERROR(integer("suppressed", &s.suppressed));
  TS_RETURN_IF_ERROR(integer("first_finding_step", &s.first_finding_step));
  if (auto it = j.find("finished"); it != j.end()) {
    if (!it->is_boolean()) return wrong("finished", "a boolean");
    s.finished = it->get<bool>();
  }
  if (auto it = j.find("parameters"); it != j.end()) {
    if (!it->is_object()) return wrong("parameters", "an object");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) return wrong("parameters", "an object of strings");
      s.parameters[k] = v.get<std::string>();
    }
  }
  return s;
}

Status WriteRuleState(Env* env, const std::string& trial_dir, const RuleState& state,
                      int64_t now_micros) {
  const std::string dir = JoinPath(JoinPath(trial_dir, fmt::kRuleOutputDir), state.rule);
  TS_RETURN_IF_ERROR(env->CreateDirs(dir));
  return env->WriteFileAtomic(JoinPath(dir, fmt::kStatusFile),
                              RuleStateToJson(state, trial_dir, now_micros), /*sync=*/false);
}

}  // namespace trainscope

namespace trainscope::rules_internal {

namespace fmt = rule_output_format;

RuleOutput::~RuleOutput() {
  if (events_) (void)events_->Close();  // each event was flushed when appended: nothing is lost
}

Status RuleOutput::Open() {
  TS_RETURN_IF_ERROR(env_->CreateDirs(dir_));
  TS_ASSIGN_OR_RETURN(events_, env_->NewAppendableFile(JoinPath(dir_, fmt::kEventsFile)));
  return Status::OK();
}

Status RuleOutput::WriteStatus(const RuleState& state, const std::string& trial_path,
                               int64_t now_micros) {
  return env_->WriteFileAtomic(JoinPath(dir_, fmt::kStatusFile),
                               RuleStateToJson(state, trial_path, now_micros), /*sync=*/false);
}

Status RuleOutput::AppendEvent(const std::string& json) {
  if (!events_) return Status::Internal("RuleOutput: events file of " + dir_ + " is not open");
  std::string line = json;
  line.push_back('\n');
  TS_RETURN_IF_ERROR(events_->Append(line));
  return events_->Flush();
}

}  // namespace trainscope::rules_internal
