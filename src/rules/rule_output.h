// RuleOutput: the files of one rule under rule-output/<RuleName>/ (docs/formats/rule_output.md):
// status.json replaced atomically, events.jsonl appended one line per finding.
//
// Thread safety: not thread-safe; used by the runner thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trainscope/env.h"
#include "trainscope/rule_runner.h"
#include "trainscope/status.h"

namespace trainscope::rules_internal {

class RuleOutput {
 public:
  // dir: <output_dir>/<RuleName>. Nothing is written until Open.
  RuleOutput(Env* env, std::string dir) : env_(env), dir_(std::move(dir)) {}
  ~RuleOutput();
  // Creates the folder and opens events.jsonl for appending (it is kept, so a restarted runner
  // adds to it).
  Status Open();
  Status WriteStatus(const RuleState& state, const std::string& trial_path, int64_t now_micros);
  // Appends `json` and a newline in one write, then flushes.
  Status AppendEvent(const std::string& json);
  const std::string& dir() const { return dir_; }

 private:
  Env* env_;
  std::string dir_;
  std::unique_ptr<WritableFile> events_;
};

}  // namespace trainscope::rules_internal
