// Constants of the rule-output folder (docs/formats/rule_output.md). One header holds every
// constant of the format; the runner (rules) writes it and readers (CLI, MetricsFeed, the
// profiler's timeline merger, Python) read it. In store: the folder is part of the trial, and the
// lowest of its readers, the profiler, links store. A line of events.jsonl: finding.h.
#pragma once

#include <string_view>

#include "trainscope/trial_format.h"

namespace trainscope::rule_output_format {

// <trial>/rule-output/<RuleName>/{status.json, events.jsonl}
inline constexpr std::string_view kRuleOutputDir = trial_format::kRuleOutputDir;
inline constexpr std::string_view kStatusFile = "status.json";
inline constexpr std::string_view kEventsFile = "events.jsonl";
// "version" key of status.json.
inline constexpr int kStatusVersion = 1;
// "kind" of an events.jsonl line.
inline constexpr std::string_view kKindFinding = "finding";

}  // namespace trainscope::rule_output_format
