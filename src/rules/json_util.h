// JSON helpers shared by the rules module: non-finite numbers as strings, UTC time stamps,
// short number formatting for explanations.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "trainscope/time_format.h"

namespace trainscope::rules_internal {

// NaN -> "NaN", +inf -> "Infinity", -inf -> "-Infinity", else the number.
nlohmann::json DoubleToJson(double v);
// Inverse of DoubleToJson; nullopt for anything else.
std::optional<double> DoubleFromJson(const nlohmann::json& v);
// FormatTimeUtc ("2026-11-21T10:00:00.123456Z"): trainscope/time_format.h (core).
// "%.4g" with "nan", "inf", "-inf".
std::string Num(double v);

}  // namespace trainscope::rules_internal
