#include "trainscope/finding.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "actions/finding_json.h"

namespace trainscope {
namespace {

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

}  // namespace

std::string_view RuleStatusName(RuleStatus status) {
  switch (status) {
    case RuleStatus::kInProgress:
      return "InProgress";
    case RuleStatus::kIssuesFound:
      return "IssuesFound";
    case RuleStatus::kNoIssuesFound:
      return "NoIssuesFound";
    case RuleStatus::kError:
      return "Error";
    case RuleStatus::kStopped:
      return "Stopped";
  }
  return "Unknown";
}

std::optional<RuleStatus> RuleStatusFromName(std::string_view name) {
  for (RuleStatus s : kAllRuleStatuses) {
    if (EqualsIgnoreCase(name, RuleStatusName(s))) return s;
  }
  return std::nullopt;
}

std::string_view FindingKindName(FindingKind kind) {
  return kind == FindingKind::kStatusChange ? "status" : "finding";
}

Finding Finding::StatusChange(std::string rule, RuleStatus status, std::string explanation) {
  Finding f;
  f.kind = FindingKind::kStatusChange;
  f.rule = std::move(rule);
  f.status = status;
  f.explanation = std::move(explanation);
  return f;
}

std::string FindingToJson(const Finding& finding) {
  return actions_internal::FindingToJsonObject(finding).dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Finding> FindingFromJson(std::string_view json) {
  nlohmann::json object = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) {
    return Status::InvalidArgument("finding: not valid JSON: " + std::string(json.substr(0, 200)));
  }
  return actions_internal::FindingFromJsonObject(object);
}

std::string FindingSummary(const Finding& f) {
  std::string out = f.rule.empty() ? std::string("(unnamed rule)") : f.rule;
  out += ": ";
  out += RuleStatusName(f.status);
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
    if (f.value) out += " value " + actions_internal::FormatNumber(*f.value);
    if (f.value && f.threshold) out += ",";
    if (f.threshold) out += " threshold " + actions_internal::FormatNumber(*f.threshold);
  }
  out += ".";
  if (!f.explanation.empty()) out += " " + f.explanation;
  return out;
}

namespace actions_internal {

nlohmann::json DoubleToJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

std::optional<double> DoubleFromJson(const nlohmann::json& v) {
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

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

nlohmann::json FindingToJsonObject(const Finding& f) {
  nlohmann::json j = nlohmann::json::object();
  j["kind"] = std::string(FindingKindName(f.kind));
  j["rule"] = f.rule;
  j["status"] = std::string(RuleStatusName(f.status));
  if (f.step >= 0) j["step"] = f.step;
  if (f.mode) j["mode"] = std::string(ModeName(*f.mode));
  if (!f.tensor.empty()) j["tensor"] = f.tensor;
  if (f.value) j["value"] = DoubleToJson(*f.value);
  if (f.threshold) j["threshold"] = DoubleToJson(*f.threshold);
  if (!f.explanation.empty()) j["explanation"] = f.explanation;
  if (!f.recommendation.empty()) j["recommendation"] = f.recommendation;
  if (f.time_micros != 0) {
    j["time_us"] = f.time_micros;
    j["time"] = FormatTimeUtc(f.time_micros);
  }
  return j;
}

namespace {

Status WrongType(std::string_view key, std::string_view want, const nlohmann::json& got) {
  return Status::InvalidArgument(
      "finding: key \"" + std::string(key) + "\" must be " + std::string(want) + ", got " +
      got.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Status GetString(const nlohmann::json& j, std::string_view key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::OK();
  if (!it->is_string()) return WrongType(key, "a string", *it);
  *out = it->get<std::string>();
  return Status::OK();
}

Status GetDouble(const nlohmann::json& j, std::string_view key, std::optional<double>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::OK();
  *out = DoubleFromJson(*it);
  if (!*out) return WrongType(key, "a number, \"NaN\", \"Infinity\" or \"-Infinity\"", *it);
  return Status::OK();
}

}  // namespace

Result<Finding> FindingFromJsonObject(const nlohmann::json& j) {
  if (!j.is_object()) return WrongType("(top level)", "an object", j);
  Finding f;
  std::string kind = "finding";
  TS_RETURN_IF_ERROR(GetString(j, "kind", &kind));
  if (kind == "finding") {
    f.kind = FindingKind::kFinding;
  } else if (kind == "status") {
    f.kind = FindingKind::kStatusChange;
  } else {
    return WrongType("kind", "\"finding\" or \"status\"", j["kind"]);
  }
  TS_RETURN_IF_ERROR(GetString(j, "rule", &f.rule));
  if (f.rule.empty()) return Status::InvalidArgument("finding: key \"rule\" is missing or empty");
  std::string status;
  TS_RETURN_IF_ERROR(GetString(j, "status", &status));
  auto parsed_status = RuleStatusFromName(status);
  if (!parsed_status) {
    return Status::InvalidArgument(
        "finding: key \"status\" must be one of InProgress, IssuesFound, NoIssuesFound, Error, "
        "Stopped; got \"" +
        status + "\"");
  }
  f.status = *parsed_status;
  if (auto it = j.find("step"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) return WrongType("step", "an integer", *it);
    f.step = it->get<int64_t>();
  }
  std::string mode;
  TS_RETURN_IF_ERROR(GetString(j, "mode", &mode));
  if (!mode.empty()) {
    f.mode = ModeFromName(mode);
    if (!f.mode) return WrongType("mode", "TRAIN, EVAL, PREDICT or GLOBAL", j["mode"]);
  }
  TS_RETURN_IF_ERROR(GetString(j, "tensor", &f.tensor));
  TS_RETURN_IF_ERROR(GetDouble(j, "value", &f.value));
  TS_RETURN_IF_ERROR(GetDouble(j, "threshold", &f.threshold));
  TS_RETURN_IF_ERROR(GetString(j, "explanation", &f.explanation));
  TS_RETURN_IF_ERROR(GetString(j, "recommendation", &f.recommendation));
  if (auto it = j.find("time_us"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) return WrongType("time_us", "an integer", *it);
    f.time_micros = it->get<int64_t>();
  }
  return f;
}

}  // namespace actions_internal
}  // namespace trainscope
