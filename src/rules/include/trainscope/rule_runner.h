// RuleRunner: follows a trial as it grows and evaluates its rules on each new complete step.
//
// Run() loops: Trial::WaitForChange (inotify where the Env can watch, else polling every
// `wait_timeout`), then Poll(): every complete global step not evaluated yet, in ascending order,
// is given to every active rule (SetRequiredTensors, pre-load, InvokeAtStep), through one
// RuleData whose per-step cache the rules share; then every rule gets OnTick(now). When the
// training has ended and every step is evaluated (or end_step is reached), each rule gets
// Finish() and its final status, and Run() returns.
//
// Output, per rule, under <output_dir>/<RuleName>/ (docs/formats/rule_output.md):
//   status.json   the current status, replaced atomically (write to .tmp, rename) when the status
//                 changes, and otherwise at most once per `status_interval` while steps advance;
//   events.jsonl  one RuleFindingToJson line per finding, appended and flushed at once.
// A rule that keeps finding the same problem on the same tensor writes at most
// `max_events_per_tensor` lines for it; the rest are counted in status.json ("suppressed").
// Each written finding also goes to every FindingSink, on the runner's thread, before the next
// rule is evaluated.
//
// Statuses: InProgress from AddRule; IssuesFound from the first finding on (sticky); at the end
// NoIssuesFound if nothing was found; Error (with the message) when the rule returned an error
// other than "no data for this step" or threw: the runner evaluates that rule no further and
// goes on with the others; Stopped when Stop() ended the run before the data ended and nothing
// was found.
//
// Memory: the runner keeps one cursor and per-rule counters; the cache keeps a few steps; rules
// keep bounded windows. Nothing grows with the number of steps.
//
// Thread safety: AddRule, AddSink, Poll and Run are called from one thread. Stop(), states() and
// stats() may be called from any thread; stats() is a snapshot the runner's thread takes after
// each step, tick and final round (rules and the data cache are not thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/rule.h"
#include "trainscope/rule_data.h"
#include "trainscope/status.h"
#include "trainscope/trial.h"

namespace trainscope {

// Receives each finding written to events.jsonl: the struct and its JSON line (the same text).
// Called on the runner's thread; must be quick (queue slow work).
using FindingSink = std::function<void(const RuleFinding& finding, const std::string& json)>;

struct RunnerOptions {
  Env* env = nullptr;                           // nullptr = Env::Default(); for rule-output files
  std::string output_dir;                       // "" = <trial path>/rule-output
  bool write_output = true;                     // false: no files (sinks and states() only)
  int64_t start_step = 0;                       // first global step evaluated
  int64_t end_step = -1;                        // exclusive; -1 = until the training ends
  std::chrono::milliseconds wait_timeout{200};  // longest wait for a change (and tick period)
  std::chrono::milliseconds status_interval{1000};  // progress rewrites of status.json
  size_t max_cached_steps = 2;                      // RuleData cache
  int max_events_per_tensor = 20;                   // per rule and tensor, in events.jsonl
  // The clock (findings' time, ticks, StalledTrainingRule). Default: env->NowMicros().
  std::function<int64_t()> now_micros;
  // Where profiler rules read system/ and framework/ (RuleDataOptions::profiler_dir).
  std::string profiler_dir;
};

// A rule's state, as status.json has it.
struct RuleState {
  std::string rule;
  RuleEvaluationStatus status = RuleEvaluationStatus::kInProgress;
  std::string message;          // Error: the error; else a short description
  int64_t steps_evaluated = 0;  // steps for which the rule gave a verdict
  int64_t steps_skipped = 0;    // steps without the data the rule needs
  int64_t last_step = -1;       // last global step evaluated
  int64_t findings = 0;         // findings written to events.jsonl
  int64_t suppressed = 0;       // findings not written (max_events_per_tensor)
  int64_t first_finding_step = -1;
  bool finished = false;  // final status written
  RuleParams parameters;
};

// status.json (docs/formats/rule_output.md): its one codec and writer, which the runner, the
// rule workers and `trainscope run` use.
// The file's text: pretty-printed JSON and a newline; `updated_us`/`updated` from now_micros.
std::string RuleStateToJson(const RuleState& state, const std::string& trial_path,
                            int64_t now_micros);
// Parses a status.json text. Keys that are absent keep RuleState's defaults; unknown keys are
// ignored. InvalidArgument naming the key when the text is not a JSON object, a known key has
// the wrong type, or "status" is not a status name.
Result<RuleState> RuleStateFromJson(std::string_view json);
// Writes <trial_dir>/rule-output/<state.rule>/status.json atomically (a reader sees the old file
// or the new one), creating the folders.
Status WriteRuleState(Env* env, const std::string& trial_dir, const RuleState& state,
                      int64_t now_micros);

struct RunnerStats {
  int64_t steps_evaluated = 0;  // distinct global steps evaluated
  int64_t last_step = -1;
  int64_t polls = 0;
  int64_t tracked_tensor_keys = 0;  // (rule, tensor) pairs counted for max_events_per_tensor
  size_t rule_state_bytes = 0;      // sum of Rule::StateBytes()
  RuleDataStats data;
};

class RuleRunner {
 public:
  // Opens the trial at `path` (Unavailable while it has no collections file yet). A
  // refresh_interval of 0 becomes 1 hour: the runner refreshes explicitly before each round, so
  // the rules' queries need not. Give a Trial opened likewise to the constructor.
  static Result<std::unique_ptr<RuleRunner>> Open(const std::string& path,
                                                  RunnerOptions options = {},
                                                  TrialOptions trial_options = {});
  // REQUIRES: trial != nullptr.
  RuleRunner(std::shared_ptr<Trial> trial, RunnerOptions options = {});
  ~RuleRunner();
  RuleRunner(const RuleRunner&) = delete;
  RuleRunner& operator=(const RuleRunner&) = delete;

  // Adds a rule: binds it, creates its output folder and writes status InProgress. A bind error
  // (e.g. an other trial that cannot be opened) still adds the rule, in the Error status.
  // InvalidArgument if a rule of the same name was added already.
  Status AddRule(std::unique_ptr<Rule> rule);
  void AddSink(FindingSink sink);

  // Refreshes the trial and evaluates what is available. Returns true when the run is done (the
  // training ended and every step was evaluated, end_step was reached, or Stop() was called);
  // final statuses are then written.
  Result<bool> Poll();
  // Poll() and WaitForChange until done. Returns the first I/O error on rule-output files, or OK.
  Status Run();
  // Ends Run() at its next wake-up (within wait_timeout); the statuses become final.
  void Stop();

  std::vector<RuleState> states() const;
  RunnerStats stats() const;
  Trial& trial() const { return *trial_; }
  RuleData& data() { return *data_; }
  // <output_dir>/<rule>/
  std::string RuleOutputDir(const std::string& rule) const;

  class Impl;

 private:
  std::shared_ptr<Trial> trial_;
  std::unique_ptr<RuleData> data_;
  std::unique_ptr<Impl> impl_;
};

// One evaluation as smdebug's Rule.invoke does it, without waiting: the rule's
// SetRequiredTensors(step), every required (tensor, step) read into data's cache (a regex
// request matches names saved at any step; a plain name that was never saved is NotFound, as
// smdebug's TensorUnavailable), then InvokeAtStep(step). A C++ exception from the rule becomes
// Internal. NotFound/Unavailable/OutOfRange mean "no data for this step".
// REQUIRES: rule.bound() (to `data`).
Result<Verdict> EvaluateRuleAtStep(Rule& rule, RuleData& data, int64_t step);

// smdebug's invoke_rule(rule_obj, start_step=0, end_step=None, raise_eval_cond=False), in C++:
// evaluates `rule` at global steps start_step, start_step+1, ... (below end_step when given),
// waiting for each step to be written; steps without the needed data are skipped (smdebug
// swallows TensorUnavailableForStep, StepUnavailable, TensorUnavailable); the loop ends when the
// training has ended and the next step will never come (smdebug's NoMoreData), at end_step, or at
// a verdict with end_of_rule. With raise_eval_cond, it returns at the first met condition (C++'s
// equivalent of re-raising RuleEvaluationConditionMet). Other errors are returned.
struct InvokeRuleResult {
  bool condition_met = false;  // met at least once
  int64_t first_met_step = -1;
  int64_t last_step = -1;  // last step evaluated
  int64_t steps_evaluated = 0;
  std::vector<RuleFinding> findings;  // the first 1000 (bounded)
  int64_t findings_total = 0;
};
struct InvokeRuleOptions {
  int64_t start_step = 0;
  std::optional<int64_t> end_step;
  bool raise_eval_cond = false;
  std::chrono::milliseconds wait_timeout{200};
  // Gives up (Unavailable) after waiting this long for a step that does not come.
  std::chrono::milliseconds max_wait{std::chrono::hours(24 * 365)};
};
// REQUIRES: rule.bound() (to `data`).
Result<InvokeRuleResult> InvokeRule(Rule& rule, RuleData& data, InvokeRuleOptions options = {});

}  // namespace trainscope
