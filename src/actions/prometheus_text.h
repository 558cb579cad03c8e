// Private: writing the Prometheus text exposition format 0.0.4 (docs/formats/metrics.md).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainscope::actions_internal {

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool ValidMetricName(std::string_view name);
// HELP text: backslash and newline escaped.
std::string EscapeHelp(std::string_view text);
// Label value: backslash, double quote and newline escaped.
std::string EscapeLabelValue(std::string_view value);
// A sample value: "+Inf", "-Inf", "NaN", integers without exponent, else shortest round-trip.
std::string FormatSampleValue(double v);

// Builds an exposition one family at a time. Not thread-safe.
class ExpositionWriter {
 public:
  // Starts a family: "# HELP" and "# TYPE" lines. `type` is counter, gauge or untyped.
  void Family(std::string_view name, std::string_view help, std::string_view type);
  // One sample line. Label names must be valid; values are escaped here.
  void Sample(std::string_view name, const Labels& labels, double value);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

}  // namespace trainscope::actions_internal
