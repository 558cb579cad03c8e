// The stop signal: how a rule (or a person) asks a training process to stop, through a file in
// the trial folder, <trial>/rule-output/stop_training.json (docs/formats/stop_signal.md). This
// header is the one definition of the file: its constants, its content (StopRequest), its codec,
// its reader and its writer. The hook (capture), the actions, the C API, the CLI and the Python
// bindings all call it.
//
// The training side (Hook::Step) calls StopSignal::Check() at a step boundary, at most every
// 10 ms (HookConfig::stop_check_interval_ms): it costs one access(2) through the Env, two when
// smdebug's SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE is set, and never fails (a folder that cannot be
// read counts as "no stop"). The rule side calls Raise(), which publishes the reason atomically,
// so a reader sees either nothing or the whole reason. A bare `touch` of the file also stops
// training (its reason then reads as "unknown").
//
// Thread safety: a StopSignal is immutable after construction; Check and Read may be called from
// any thread. Raise and Clear may race with each other across processes: the first reason
// published is kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/env.h"
#include "trainscope/modes.h"
#include "trainscope/status.h"

namespace trainscope {

namespace stop_signal_format {
// <trial>/rule-output/<kFileName> (trial_format::kRuleOutputDir); its presence alone means "stop".
inline constexpr std::string_view kFileName = "stop_training.json";
inline constexpr int kVersion = 1;
// smdebug's convention: this variable names a file (joined to the trial folder; an absolute name
// stands alone) holding an epoch-seconds timestamp. Its presence also means "stop".
inline constexpr const char* kSmdebugEnv = "SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE";
}  // namespace stop_signal_format

// Why training should stop: the stop file's content.
struct StopRequest {
  std::string source = "rule";  // "rule", "user", "smdebug" (the variable's file) or "unknown"
  std::string rule;             // the rule that asked; empty for a person
  int64_t step = -1;            // the global step at which it asked; -1 if not given
  std::optional<Mode> mode;
  std::string explanation;     // one line
  std::string recommendation;  // may be empty
  int64_t time_micros = 0;     // when it was asked (epoch microseconds); 0 if not known
  std::string host;            // who wrote the file: Raise() fills both; empty / 0 if not known
  int64_t pid = 0;

  // "<who> at step <step>: <explanation>", where <who> is the rule, else "an smdebug rule" for
  // smdebug's file, else "a person"; "?" without a step. The hook prints it to stderr after
  // "trainscope: training stopped on request of ". Not escaped: escape it for a terminal.
  std::string ToString() const;
};

// One line of JSON (no newline), the stop file's content; docs/formats/stop_signal.md. `time` is
// derived from time_micros; host and pid are written when known.
std::string StopRequestToJson(const StopRequest& request);
// Parses a stop file's content (unknown keys are ignored). InvalidArgument naming the key when a
// known key has the wrong type or the text is not a JSON object.
Result<StopRequest> StopRequestFromJson(std::string_view json);

class StopSignal {
 public:
  // Watches `trial_dir` through `env` (not owned; must outlive this; null means Env::Default()).
  // Reads SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE once, here.
  explicit StopSignal(const std::string& trial_dir, Env* env = nullptr);

  // True when a stop has been requested. One access(2) (two with smdebug's variable set).
  bool Check() const;
  // The same for a folder, without keeping an object (resolves the paths at each call).
  static bool Check(const std::string& trial_dir);

  // The request, read from the file. NotFound when there is none. A file that is present but gives
  // no reason (empty, as `touch` makes it) or does not parse, or cannot be read (e.g. a FIFO),
  // gives source "unknown" and an explanation saying so: its presence alone means "stop".
  // smdebug's file gives source "smdebug", time_micros from its timestamp (0 when not a number).
  Result<StopRequest> Read() const;

  // Writes `request` (stamped with this host and pid) to the trial's stop file, creating
  // rule-output/. If a stop file is already there, leaves it (the first reason wins, also between
  // processes raising at the same instant: the file is published with a hard link) and returns OK.
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

}  // namespace trainscope
