#include "trainscope/finding.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "trainscope/rule_output_format.h"

namespace trainscope {
namespace {

using nlohmann::json;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// A double as JSON: a number when finite, else "NaN", "Infinity" or "-Infinity".
json DoubleToJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// Inverse of DoubleToJson; nullopt for anything else.
std::optional<double> DoubleFromJson(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity" || s == "+Infinity" || s == "inf")
      return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

Status WrongType(std::string_view key, std::string_view want, const json& got) {
  return Status::InvalidArgument("finding: key \"" + std::string(key) + "\" must be " +
                                 std::string(want) + ", got " +
                                 got.dump(-1, ' ', false, json::error_handler_t::replace));
}

Status GetString(const json& j, std::string_view key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::OK();
  if (!it->is_string()) return WrongType(key, "a string", *it);
  *out = it->get<std::string>();
  return Status::OK();
}

Status GetInt(const json& j, std::string_view key, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::OK();
  if (!it->is_number_integer()) return WrongType(key, "an integer", *it);
  *out = it->get<int64_t>();
  return Status::OK();
}

Status GetDouble(const json& j, std::string_view key, std::optional<double>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::OK();
  *out = DoubleFromJson(*it);
  if (!*out) return WrongType(key, "a number, \"NaN\", \"Infinity\" or \"-Infinity\"", *it);
  return Status::OK();
}

// The one parser. `folder_rule`: non-null for a line of that rule's events.jsonl, whose missing
// "rule" and "status" the folder stands for.
Result<RuleFinding> Parse(std::string_view text, const std::string_view* folder_rule) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Status::InvalidArgument("finding: not valid JSON: " + std::string(text.substr(0, 200)));
  }
  if (!j.is_object()) return WrongType("(top level)", "an object", j);
  RuleFinding f;
  std::string kind(FindingKindName(FindingKind::kFinding));
  TS_RETURN_IF_ERROR(GetString(j, "kind", &kind));
  if (kind == FindingKindName(FindingKind::kFinding)) {
    f.kind = FindingKind::kFinding;
  } else if (kind == FindingKindName(FindingKind::kStatusChange)) {
    f.kind = FindingKind::kStatusChange;
  } else {
    return WrongType("kind", "\"finding\" or \"status\"", j["kind"]);
  }
  TS_RETURN_IF_ERROR(GetString(j, "rule", &f.rule));
  if (f.rule.empty() && folder_rule != nullptr) f.rule = std::string(*folder_rule);
  if (f.rule.empty()) return Status::InvalidArgument("finding: key \"rule\" is missing or empty");
  std::string status;
  TS_RETURN_IF_ERROR(GetString(j, "status", &status));
  if (status.empty() && folder_rule != nullptr) {
    f.status = RuleEvaluationStatus::kIssuesFound;
  } else {
    auto parsed = RuleEvaluationStatusFromName(status);
    if (!parsed) {
      return Status::InvalidArgument(
          "finding: key \"status\" must be one of InProgress, IssuesFound, NoIssuesFound, Error, "
          "Stopped; got \"" +
          status + "\"");
    }
    f.status = *parsed;
  }
  TS_RETURN_IF_ERROR(GetInt(j, "step", &f.step));
  if (f.step < 0) f.step = -1;  // not tied to a step, as the writer would leave it
  std::string mode;
  TS_RETURN_IF_ERROR(GetString(j, "mode", &mode));
  if (!mode.empty()) {
    f.mode = ModeFromName(mode);
    if (!f.mode) return WrongType("mode", "TRAIN, EVAL, PREDICT or GLOBAL", j["mode"]);
  }
  TS_RETURN_IF_ERROR(GetInt(j, "mode_step", &f.mode_step));
  if (f.mode_step < 0) f.mode_step = -1;
  TS_RETURN_IF_ERROR(GetString(j, "tensor", &f.tensor));
  TS_RETURN_IF_ERROR(GetDouble(j, "value", &f.value));
  TS_RETURN_IF_ERROR(GetDouble(j, "threshold", &f.threshold));
  TS_RETURN_IF_ERROR(GetString(j, "condition", &f.condition));
  TS_RETURN_IF_ERROR(GetString(j, "explanation", &f.explanation));
  TS_RETURN_IF_ERROR(GetString(j, "recommendation", &f.recommendation));
  TS_RETURN_IF_ERROR(GetString(j, "trial", &f.trial));
  if (auto it = j.find("stop_training"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return WrongType("stop_training", "true or false", *it);
    f.stop_training = it->get<bool>();
  }
  TS_RETURN_IF_ERROR(GetInt(j, "time_us", &f.time_micros));
  return f;
}

}  // namespace

std::string_view RuleEvaluationStatusName(RuleEvaluationStatus status) {
  switch (status) {
    case RuleEvaluationStatus::kInProgress:
      return "InProgress";
    case RuleEvaluationStatus::kIssuesFound:
      return "IssuesFound";
    case RuleEvaluationStatus::kNoIssuesFound:
      return "NoIssuesFound";
    case RuleEvaluationStatus::kError:
      return "Error";
    case RuleEvaluationStatus::kStopped:
      return "Stopped";
  }
  return "Unknown";
}

std::optional<RuleEvaluationStatus> RuleEvaluationStatusFromName(std::string_view name) {
  for (RuleEvaluationStatus s : kAllRuleEvaluationStatuses) {
    if (EqualsIgnoreCase(name, RuleEvaluationStatusName(s))) return s;
  }
  return std::nullopt;
}

std::string_view FindingKindName(FindingKind kind) {
  return kind == FindingKind::kStatusChange ? "status" : rule_output_format::kKindFinding;
}

RuleFinding RuleFinding::StatusChange(std::string rule, RuleEvaluationStatus status,
                                      std::string explanation) {
  RuleFinding f;
  f.kind = FindingKind::kStatusChange;
  f.rule = std::move(rule);
  f.status = status;
  f.explanation = std::move(explanation);
  return f;
}

std::string RuleFindingToJson(const RuleFinding& f, FindingKeys keys) {
  const bool all = keys == FindingKeys::kAll;
  json j = json::object();
  j["kind"] = std::string(FindingKindName(f.kind));
  j["rule"] = f.rule;
  j["status"] = std::string(RuleEvaluationStatusName(f.status));
  if (f.step >= 0) j["step"] = f.step;
  if (f.mode) j["mode"] = std::string(ModeName(*f.mode));
  if (all && f.mode_step >= 0) j["mode_step"] = f.mode_step;
  if (!f.tensor.empty()) j["tensor"] = f.tensor;
  if (f.value) j["value"] = DoubleToJson(*f.value);
  if (f.threshold) j["threshold"] = DoubleToJson(*f.threshold);
  if (all && !f.condition.empty()) j["condition"] = f.condition;
  if (!f.explanation.empty()) j["explanation"] = f.explanation;
  if (!f.recommendation.empty()) j["recommendation"] = f.recommendation;
  if (all && !f.trial.empty()) j["trial"] = f.trial;
  if (all && f.stop_training) j["stop_training"] = true;
  if (f.time_micros != 0) {
    j["time_us"] = f.time_micros;
    j["time"] = FormatTimeUtc(f.time_micros);
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<RuleFinding> RuleFindingFromJson(std::string_view json) { return Parse(json, nullptr); }

Result<RuleFinding> RuleFindingFromEventsLine(std::string_view line, std::string_view rule) {
  return Parse(line, &rule);
}

std::string FindingNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string DescribeFinding(const RuleFinding& f) {
  std::string out = f.rule.empty() ? std::string("(unnamed rule)") : f.rule;
  out += ": ";
  out += RuleEvaluationStatusName(f.status);
  if (f.step >= 0) {
    out += " at step " + std::to_string(f.step);
    if (f.mode) {
      out += " (";
      out += ModeName(*f.mode);
      out += ")";
    }
  }
  if (!f.tensor.empty()) out += " on " + f.tensor;
  if (f.value || f.threshold) {
    out += ":";
    if (f.value) out += " value " + FindingNumber(*f.value);
    if (f.value && f.threshold) out += ",";
    if (f.threshold) out += " threshold " + FindingNumber(*f.threshold);
  }
  out += ".";
  if (!f.explanation.empty()) out += " " + f.explanation;
  return out;
}

}  // namespace trainscope
