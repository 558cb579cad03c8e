#include "rules/json_util.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

namespace trainscope::rules_internal {

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
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

std::string FormatTimeUtc(int64_t time_micros) {
  int64_t secs = time_micros / 1000000;
  int64_t micros = time_micros % 1000000;
  if (micros < 0) {
    micros += 1000000;
    secs -= 1;
  }
  time_t t = static_cast<time_t>(secs);
  struct tm tm_utc;
  gmtime_r(&t, &tm_utc);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm_utc.tm_year + 1900,
                tm_utc.tm_mon + 1, tm_utc.tm_mday, tm_utc.tm_hour, tm_utc.tm_min, tm_utc.tm_sec,
                static_cast<long long>(micros));
  return buf;
}

std::string Num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

}  // namespace trainscope::rules_internal
