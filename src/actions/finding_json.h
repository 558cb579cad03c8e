// Private: Finding <-> nlohmann::json objects, shared by finding.cc, event_log.cc and the
// notifiers (which add their own keys to the same object).
#pragma once

#include <nlohmann/json.hpp>

#include "trainscope/finding.h"

namespace trainscope::actions_internal {

nlohmann::json FindingToJsonObject(const Finding& finding);
Result<Finding> FindingFromJsonObject(const nlohmann::json& object);

// A double as JSON: a number when finite, else "NaN", "Infinity" or "-Infinity".
nlohmann::json DoubleToJson(double v);
// Inverse of DoubleToJson; nullopt for anything else.
std::optional<double> DoubleFromJson(const nlohmann::json& v);

// "%.6g" of v, with "NaN"/"inf"/"-inf" spelled out.
std::string FormatNumber(double v);

// HostName: trainscope/time_format.h (core).

}  // namespace trainscope::actions_internal
