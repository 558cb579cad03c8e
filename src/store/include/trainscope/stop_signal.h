// StopSignal: how a rule (or a person) asks a training process to stop, through a file in the
// trial folder: <trial>/rule-output/stop_training.json (docs/formats/stop_signal.md).
//
// The training side calls Check() at every step boundary: it costs one stat-like syscall
// (access(2)), two when smdebug's SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE is set, and never fails (a
// folder that cannot be read counts as "no stop"). The rule side calls Raise(), which writes the
// reason atomically (temporary file + rename), so a reader sees either nothing or the whole
// reason. A bare `touch` of the file also stops training (its reason then reads as "unknown").
//
// Thread safety: a StopSignal is immutable after construction; Check and Read may be called from
// any thread. Raise and Clear may race with each other across processes: the first reason written
// is kept (best effort; every request is also in the event log).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "trainscope/action.h"
#include "trainscope/env.h"
#include "trainscope/finding.h"
#include "trainscope/status.h"

namespace trainscope {

// Why training should stop.
struct StopRequest {
  std::string source = "rule";  // "rule", "user", "smdebug" (the env-var file) or "unknown"
  std::string rule;             // the rule that asked; empty for a person
  int64_t step = -1;            // the step at which it asked; -1 if none
  std::optional<Mode> mode;
  std::string explanation;     // one line
  std::string recommendation;  // may be empty
  int64_t time_micros = 0;     // when it was asked (epoch microseconds)

  // The request a finding makes: source "rule", its rule, step, mode, explanation and time.
  static StopRequest FromFinding(const Finding& finding);
};

// One line of JSON, the stop file's content; docs/formats/stop_signal.md.
std::string StopRequestToJson(const StopRequest& request);
// Parses StopRequestToJson's output. InvalidArgument naming the key otherwise.
Result<StopRequest> StopRequestFromJson(std::string_view json);

class StopSignal {
 public:
  // Watches `trial_dir` through `env` (not owned; must outlive this; null means Env::Default()).
  // Reads SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE once, here.
  explicit StopSignal(std::string trial_dir, Env* env = nullptr);

  // True when a stop has been requested. One access(2) (two with smdebug's variable set).
  bool Check() const;
  // The same for a folder, without keeping an object (resolves the paths at each call).
  static bool Check(const std::string& trial_dir);

  // The request, read from the file. NotFound when there is none. A file that is present but does
  // not parse (e.g. made by `touch`) gives source "unknown" and an explanation saying so.
  Result<StopRequest> Read() const;

  // Writes `request` to the trial's stop file (creating rule-output/). If a stop file is already
  // there, leaves it (the first reason wins, also between processes raising at the same instant:
  // the file is published with a hard link) and returns OK.
  static Status Raise(Env* env, const std::string& trial_dir, const StopRequest& request);
  // Removes the stop file (e.g. before resuming a stopped run). OK if there was none.
  static Status Clear(Env* env, const std::string& trial_dir);

  // <trial>/rule-output/stop_training.json
  static std::string PathFor(const std::string& trial_dir);
  const std::string& path() const { return path_; }
  // The smdebug-convention path, or empty when the variable is unset.
  const std::string& smdebug_path() const { return smdebug_path_; }

 private:
  Env* env_;
  std::string path_;
  std::string smdebug_path_;
};

// The "stop" action: Notify() raises the trial's stop signal for findings (status changes are
// ignored). Reports each raise to `on_outcome` (may be empty) on the caller's thread.
// Thread-safe. `env` is not owned and must outlive the action.
std::unique_ptr<Action> NewStopTrainingAction(Env* env, std::string trial_dir,
                                              OutcomeCallback on_outcome = {});

}  // namespace trainscope
