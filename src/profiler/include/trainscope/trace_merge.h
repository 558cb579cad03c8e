// `trainscope timeline`: everything the profiler and the rules recorded about a trial, merged into
// one Chrome trace (object form) that Perfetto and chrome://tracing open: system metrics as
// counters, framework spans, torch.profiler operator traces, rule findings as global instants.
// docs/formats/timeline.md ("Merged trace") describes the output; ValidateTraceEvents is the strict
// check the tests apply to it.
//
// Thread safety: free functions; concurrent calls on distinct outputs are fine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/status.h"

namespace trainscope {

struct MergeTimelineOptions {
  // Only what overlaps [start_us, end_us) (epoch microseconds).
  int64_t start_us = kTimeMin;
  int64_t end_us = kTimeMax;
  bool include_system = true;     // system/ counters
  bool include_framework = true;  // framework/pevents/ spans
  bool include_detailed = true;   // framework/pytorch/detailed_profiling/**/*.json
  bool include_rules = true;      // rule-output/*/events.jsonl
};

struct MergeTimelineResult {
  int64_t base_time_us = 0;  // epoch microseconds of ts 0 in the output
  int64_t counter_events = 0;
  int64_t framework_events = 0;
  int64_t detailed_events = 0;
  int64_t rule_events = 0;
  int64_t metadata_events = 0;
  // Inputs skipped or partly read, and why (path and reason).
  std::vector<std::string> warnings;
};

// Writes the merged trace of `trial_dir` to `out_path` (atomically: .tmp then rename). An empty
// trial gives a valid trace with no events. Errors: only writing the output (IOError) or an empty
// range (InvalidArgument); unreadable inputs become warnings.
Result<MergeTimelineResult> MergeTimeline(Env* env, const std::string& trial_dir,
                                          const std::string& out_path,
                                          const MergeTimelineOptions& options = {});

// Strict check of a Chrome trace (array or {"traceEvents": [...]}): OK, or InvalidArgument naming
// the first offending event by index and what is wrong. The rules are listed in
// docs/formats/timeline.md.
Status ValidateTraceEvents(std::string_view json_text);

}  // namespace trainscope
