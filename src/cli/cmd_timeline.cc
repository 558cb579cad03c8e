// `trainscope timeline DIR [-o OUT]`: merges a trial's system counters, framework spans,
// torch.profiler operator traces and rule findings into one Chrome trace (MergeTimeline,
// include/trainscope/trace_merge.h), then reads the output back and checks it with the strict
// validator (ValidateTraceEvents). Prints what went in; exit 1 if the output is invalid.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/table.h"
#include "cli/trial_folder.h"
#include "trainscope/env.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/trace_merge.h"

namespace trainscope::cli {
namespace {

constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();

struct TimelineOptions {
  std::string dir;
  std::string out;
  int64_t start_us = kUnset;
  int64_t end_us = kUnset;
  int64_t start_step = kUnset;
  int64_t end_step = kUnset;
  bool no_system = false;
  bool no_framework = false;
  bool no_detailed = false;
  bool no_rules = false;
  bool json = false;
};

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty() || a.back() == '/') return a + b;
  return a + "/" + b;
}

int RunTimeline(const TimelineOptions& o) {
  Env* env = Env::Default();
  const bool by_time = o.start_us != kUnset || o.end_us != kUnset;
  const bool by_step = o.start_step != kUnset || o.end_step != kUnset;
  if (by_time && by_step) {
    std::fprintf(stderr,
                 "trainscope timeline: give a time range (--start-us/--end-us) or a step range "
                 "(--start-step/--end-step), not both\n");
    return kExitUsage;
  }
  // Usage errors first, then the folder.
  if (Status s = CheckTrialFolder(o.dir); !s.ok()) {
    std::fprintf(stderr, "trainscope timeline: %s\n", EscapeForTerminal(s.message()).c_str());
    return kExitFailure;
  }
  MergeTimelineOptions m;
  m.include_system = !o.no_system;
  m.include_framework = !o.no_framework;
  m.include_detailed = !o.no_detailed;
  m.include_rules = !o.no_rules;
  if (o.start_us != kUnset) m.start_us = o.start_us;
  if (o.end_us != kUnset) m.end_us = o.end_us;
  if (by_step) {
    TimelineReader reader(env, o.dir);
    const int64_t a = o.start_step == kUnset ? 0 : o.start_step;
    const int64_t b = o.end_step == kUnset ? std::numeric_limits<int64_t>::max() / 2 : o.end_step;
    auto range = reader.GetStepTimeRange(a, b);
    if (!range.ok()) {
      std::fprintf(stderr, "trainscope timeline: steps [%lld, %lld): %s\n",
                   static_cast<long long>(a), static_cast<long long>(b),
                   EscapeForTerminal(range.status().ToString()).c_str());
      return kExitFailure;
    }
    m.start_us = range->start_us;
    m.end_us = range->end_us;
  }
  const std::string out = o.out.empty() ? JoinPath(o.dir, "merged_timeline.json") : o.out;
  auto merged = MergeTimeline(env, o.dir, out, m);
  if (!merged.ok()) {
    std::fprintf(stderr, "trainscope timeline: %s\n",
                 EscapeForTerminal(merged.status().ToString()).c_str());
    return merged.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  auto text = env->ReadFile(out);
  Status valid = text.ok() ? ValidateTraceEvents(*text) : text.status();
  MergeTimelineResult r = *merged;
  if (r.counter_events + r.framework_events + r.detailed_events + r.rule_events == 0) {
    r.warnings.push_back(
        "nothing to merge: " + o.dir +
        " has no system metrics (system/), framework spans (framework/), torch.profiler traces "
        "or rule findings (rule-output/) in range; run the training under `trainscope run`, or "
        "give the hook a profiler configuration (README, Profiling)");
  }
  if (o.json) {
    nlohmann::json j{{"output", out},
                     {"valid", valid.ok()},
                     {"base_time_us", r.base_time_us},
                     {"counter_events", r.counter_events},
                     {"framework_events", r.framework_events},
                     {"detailed_events", r.detailed_events},
                     {"rule_events", r.rule_events},
                     {"metadata_events", r.metadata_events},
                     {"warnings", r.warnings}};
    if (!valid.ok()) j["error"] = valid.ToString();
    std::cout << DumpJson(j) << "\n";
  } else {
    std::cout << "trial      " << EscapeForTerminal(o.dir) << "\n"
              << "output     " << EscapeForTerminal(out) << "\n"
              << "system     " << r.counter_events << " counter events\n"
              << "framework  " << r.framework_events << " span events\n"
              << "operators  " << r.detailed_events << " torch.profiler events\n"
              << "rules      " << r.rule_events << " findings\n"
              << "metadata   " << r.metadata_events << " events\n";
    for (const auto& w : r.warnings) std::cout << "warning    " << EscapeForTerminal(w) << "\n";
    if (valid.ok()) {
      std::cout << "valid      yes (strict trace-event check); open it in Perfetto "
                   "(ui.perfetto.dev) or chrome://tracing\n";
    }
  }
  if (!valid.ok()) {
    std::fprintf(stderr, "trainscope timeline: the merged trace %s is not valid: %s\n",
                 EscapeForTerminal(out).c_str(), EscapeForTerminal(valid.ToString()).c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void RegisterTimeline(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<TimelineOptions>();
  auto* cmd = app.add_subcommand(
      "timeline",
      "Merge a trial's system metrics, framework spans, operator traces and rule findings into "
      "one Chrome trace (Perfetto)");
  cmd->add_option("dir", o->dir, "Trial folder")->required();
  cmd->add_option("-o,--output", o->out, "Output file (default DIR/merged_timeline.json)");
  cmd->add_option("--start-us", o->start_us, "Only what overlaps from this epoch microsecond");
  cmd->add_option("--end-us", o->end_us, "... up to this epoch microsecond (exclusive)");
  cmd->add_option("--start-step", o->start_step,
                  "Only steps from this one (mode steps as the framework events record them)");
  cmd->add_option("--end-step", o->end_step, "... up to this step (exclusive)");
  cmd->add_flag("--no-system", o->no_system, "Leave out system metrics");
  cmd->add_flag("--no-framework", o->no_framework, "Leave out framework spans");
  cmd->add_flag("--no-detailed", o->no_detailed, "Leave out torch.profiler operator traces");
  cmd->add_flag("--no-rules", o->no_rules, "Leave out rule findings");
  cmd->add_flag("--json", o->json, "Print the summary as JSON");
  cmd->callback([o, exit_code] { *exit_code = RunTimeline(*o); });
}

}  // namespace trainscope::cli
