// Constants of the files and wire formats that actions write: the event log and the metrics
// endpoint. Byte layouts: docs/formats/event_log.md, docs/formats/metrics.md.
#pragma once

#include <string_view>

#include "trainscope/trial_format.h"

namespace trainscope::actions_format {

// Everything rules and actions write lives under <trial>/rule-output/.
inline constexpr std::string_view kRuleOutputDir = trial_format::kRuleOutputDir;

// The stop signal's constants are in stop_signal.h (store module), with its one reader/writer.

// The event log: <trial>/rule-output/events.log.jsonl, one JSON object per line, appended.
inline constexpr std::string_view kEventLogFileName = "events.log.jsonl";
inline constexpr int kEventLogVersion = 1;
inline constexpr std::string_view kEventFinding = "finding";
inline constexpr std::string_view kEventStatus = "status";
inline constexpr std::string_view kEventAction = "action";

// Prometheus text exposition format 0.0.4.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kMetricsPath = "/metrics";

}  // namespace trainscope::actions_format
