// Constants of the files and wire formats that actions write: the stop signal, the event log and
// the metrics endpoint. Byte layouts: docs/formats/stop_signal.md, docs/formats/event_log.md,
// docs/formats/metrics.md.
#pragma once

#include <string_view>

namespace trainscope::actions_format {

// Everything rules and actions write lives under <trial>/rule-output/.
inline constexpr std::string_view kRuleOutputDir = "rule-output";

// The stop signal: <trial>/rule-output/stop_training.json, one JSON object, written atomically
// (a temporary file in the same folder, then rename). Its presence alone means "stop".
inline constexpr std::string_view kStopSignalFileName = "stop_training.json";
inline constexpr int kStopSignalVersion = 1;
// smdebug's convention: this variable names a file relative to the trial holding an epoch-seconds
// timestamp. trainscope honours it when reading (the file's presence also means "stop").
inline constexpr const char* kSmdebugStopSignalEnv = "SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE";

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
