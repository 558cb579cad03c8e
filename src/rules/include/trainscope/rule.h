// Rule: a check evaluated on each step of a trial, with smdebug's contract
// (smdebug/rules/rule.py): a rule names the tensors it needs for a step (SetRequiredTensors, as
// smdebug's set_required_tensors with req_tensors.add), then InvokeAtStep(step) says whether its
// condition is met, with one RuleFinding per problem seen (which tensor, the value that tripped
// it, the threshold, a one-line explanation and a concrete recommendation).
//
// Rules read tensors through RuleData (rule_data.h): the trials, behind a per-step cache shared
// by every rule of one RuleRunner, so rules asking for the same tensor read it once.
//
// Lifecycle (RuleRunner or InvokeRule drives it):
//   Bind(data)                       once, before anything else
//   for each new complete step s (ascending global steps):
//     SetRequiredTensors(s, req)     optional; the runner pre-loads what it names
//     InvokeAtStep(s)                the verdict for s
//   OnTick(now)                      on every wake-up of the runner, even without a new step
//   Finish(last_step)                once, when no more data will come
//
// Errors: a NotFound, Unavailable or OutOfRange status from SetRequiredTensors or InvokeAtStep
// means "no data for this step" and is skipped, as smdebug's invoke_rule swallows
// TensorUnavailableForStep, TensorUnavailable and StepUnavailable; any other error (or a C++
// exception) puts the rule in the Error status and the runner stops evaluating it.
//
// Memory: a rule must keep bounded state (a window of recent values, counters), never one entry
// per step, so it can follow runs of millions of steps; StateBytes() reports it for tests.
//
// Thread safety: a Rule is used by one thread at a time (its runner's).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/finding.h"
#include "trainscope/modes.h"
#include "trainscope/status.h"

namespace trainscope {

class RuleData;

// RuleFinding, RuleEvaluationStatus and their JSON codec (one line of
// rule-output/<Rule>/events.jsonl, docs/formats/rule_output.md): trainscope/finding.h (store).

// What InvokeAtStep, OnTick and Finish return.
struct Verdict {
  // True when the rule's condition is met (smdebug's invoke_at_step returning True). A met
  // verdict without findings is reported as one generic finding by the runner.
  bool condition_met = false;
  std::vector<RuleFinding> findings;
  // smdebug's RuleEvaluationConditionMet(end_of_rule=True): evaluate this rule no further.
  bool end_of_rule = false;

  void Add(RuleFinding f) {
    condition_met = true;
    findings.push_back(std::move(f));
  }
  static Verdict NotMet() { return Verdict{}; }
  static Verdict Met() { return Verdict{true, {}, false}; }
};

// smdebug's RequiredTensors: what a rule needs at a step. Trial 0 is the base trial; other trials
// are the indexes RuleData::OpenTrial returned.
class RequiredTensors {
 public:
  struct Request {
    std::string name;  // a tensor name, or a regex (re.search semantics) if should_match_regex
    std::vector<int64_t> steps;  // global steps
    size_t trial = 0;
    bool should_match_regex = false;
  };
  // smdebug's req_tensors.add(name, steps, trial=None, should_match_regex=False).
  void Add(std::string name, std::vector<int64_t> steps, size_t trial = 0,
           bool should_match_regex = false) {
    requests_.push_back({std::move(name), std::move(steps), trial, should_match_regex});
  }
  const std::vector<Request>& requests() const { return requests_; }
  void Clear() { requests_.clear(); }

 private:
  std::vector<Request> requests_;
};

// A collection a rule needs saved, so `trainscope run` can write a hook configuration
// (smdebug's JSON "CollectionConfigurations", reference smdebug.md 3.2) that saves it.
struct CollectionRequest {
  std::string name;                        // e.g. "gradients"
  std::vector<std::string> include_regex;  // empty: the collection's built-in definition
  int64_t save_interval = 10;              // in mode steps, as smdebug's SaveConfig
  int64_t start_step = 0;
  int64_t end_step = -1;                // exclusive; -1: no end
  std::vector<std::string> reductions;  // smdebug tokens, e.g. "abs_mean", "max"
  bool save_raw_tensor = true;          // false: only the reductions are needed
  std::vector<int64_t> save_steps;      // mode steps saved besides the interval's (sorted)
  // Saved in TRAIN (and GLOBAL) steps only: the rule reads it there alone (weights, which no
  // EVAL or PREDICT step moves). Merged, true when every request says so.
  bool train_only = false;
};

// Merges the requests of several rules: one entry per collection name, with the union of the
// regexes and reductions, raw tensors saved if any rule needs them, and every step that any
// request saves. The steps: the requests without an end give the interval (their smallest)
// and the start (their earliest); a request with an end adds the steps of its range that this
// interval misses as save_steps (PoorWeightInitialization's every step up to step 10 beside
// every 10th step for the other rules: steps 0-9, then 10, 20, ...; not every step for the
// whole run). Where that would list more than kMaxMergedSaveSteps steps, or no request is
// unbounded, the merge falls back to the smallest interval over the widest range. Never
// saves fewer steps than a request asked for.
inline constexpr size_t kMaxMergedSaveSteps = 1000;
std::vector<CollectionRequest> MergeCollectionRequests(
    const std::vector<CollectionRequest>& requests);
// "every 10 steps", "every 10 steps, and steps 1-9", "every step from step 5 to step 99".
std::string DescribeSaveSchedule(const CollectionRequest& request);
// smdebug's hook-config "CollectionConfigurations" array (JSON text) for merged requests: every
// value a string, lists comma-separated (so regexes must not contain commas).
std::string CollectionRequestsToHookJson(const std::vector<CollectionRequest>& requests);

// Parameters as SageMaker passes them: name -> string value.
using RuleParams = std::map<std::string, std::string>;

class Rule {
 public:
  explicit Rule(std::string name);
  virtual ~Rule();
  Rule(const Rule&) = delete;
  Rule& operator=(const Rule&) = delete;

  // The rule's name (the class name for built-in rules): rule-output/<name>/.
  const std::string& name() const { return name_; }

  // Binds the rule to what it reads. Called once, before any call below. Calls OnBind().
  // REQUIRES: data outlives the rule's use.
  Status Bind(RuleData* data);
  bool bound() const { return data_ != nullptr; }

  // smdebug's set_required_tensors(step). Default: nothing.
  virtual Status SetRequiredTensors(int64_t step, RequiredTensors& req);
  // smdebug's invoke_at_step(step): `step` is a global step.
  virtual Result<Verdict> InvokeAtStep(int64_t step) = 0;
  // Called on each wake-up of the runner with the runner's clock. Default: not met.
  virtual Result<Verdict> OnTick(int64_t now_micros);
  // Called once when no more data will come; last_step is the last global step evaluated (-1 if
  // none). Default: not met.
  virtual Result<Verdict> Finish(int64_t last_step);

  // The collections this rule needs saved (for the hook configuration). Default: none.
  virtual std::vector<CollectionRequest> RequiredCollections() const;
  // The parameters in effect, defaults included, as strings (for status.json).
  virtual RuleParams Parameters() const;
  // Bytes of state the rule keeps between steps (bounded; for tests and stats).
  virtual size_t StateBytes() const;
  // A note for the final status message when nothing was found (what was checked, or why there
  // was nothing to check, e.g. a GPU rule on a machine without GPUs). Default: none.
  virtual std::string StatusNote() const;

 protected:
  // Called by Bind once data() is set; rules open other trials here.
  virtual Status OnBind();
  // REQUIRES: bound().
  RuleData& data() const { return *data_; }
  // A finding with rule, step, mode, mode_step and trial filled in.
  RuleFinding NewFinding(int64_t step) const;

 private:
  std::string name_;
  RuleData* data_ = nullptr;
};

}  // namespace trainscope
