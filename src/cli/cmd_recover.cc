// `trainscope recover DIR [--end]`: publishes the steps a killed training handed over and left in
// the trial's journal (docs/formats/journal.md, Recovery); with --end, then marks the training
// ended (training_job_end.ts) when no writer holds the folder (docs/formats/run_lock.md), so
// readers and rules waiting for more steps stop waiting.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/table.h"
#include "trainscope/env.h"
#include "trainscope/out_dir_lock.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope::cli {

namespace {

struct RecoverOptions {
  std::string dir;
  bool json = false;
  bool end = false;
};

// What --end did: the marker written, found already there, or refused (`who` still writes).
struct EndResult {
  enum { kMarked, kAlready, kRefused } what = kMarked;
  std::string who;
};

// --end: the marker, unless a writer lives (the folder's run.lock, or a journal in use).
EndResult MarkEnded(const std::string& dir, const RecoveryReport& rep) {
  Env* env = Env::Default();
  if (env->FileExists(JoinPath(dir, trial_format::kEndOfJobFile))) return {EndResult::kAlready};
  std::string who = capture::DescribeFolderWriters(dir).value_or("");
  if (who.empty() && !rep.workers_in_use.empty()) {
    who = "the writer of worker " + rep.workers_in_use.front() + " (its journal is locked)";
  }
  if (!who.empty()) return {EndResult::kRefused, who};
  if (Status s = WriteEndOfJob(env, dir); !s.ok()) return {EndResult::kRefused, s.ToString()};
  return {EndResult::kMarked};
}

int RunRecover(const RecoverOptions& o) {
  auto r = RecoverTrial(o.dir);
  if (!r.ok()) {
    std::fprintf(stderr, "trainscope recover: %s\n",
                 EscapeForTerminal(r.status().ToString()).c_str());
    return kExitFailure;
  }
  const RecoveryReport& rep = *r;
  const EndResult ended = o.end ? MarkEnded(o.dir, rep) : EndResult{};
  const bool refused = o.end && ended.what == EndResult::kRefused;
  if (o.json) {
    nlohmann::json j = {{"dir", o.dir},
                        {"steps_recovered", rep.steps_recovered},
                        {"steps_lost", rep.steps_lost},
                        {"slots_removed", rep.slots_removed},
                        {"workers_in_use", rep.workers_in_use},
                        {"problems", rep.problems}};
    if (o.end) {
      j["ended"] = !refused;
      if (refused) j["end_refused"] = ended.who;
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s: %lld step(s) recovered from the journal, %lld lost\n",
                EscapeForTerminal(o.dir).c_str(), static_cast<long long>(rep.steps_recovered),
                static_cast<long long>(rep.steps_lost));
    for (const std::string& w : rep.workers_in_use) {
      std::printf("  worker %s: left alone, its writer is still running\n",
                  EscapeForTerminal(w).c_str());
    }
    for (const std::string& p : rep.problems) {
      std::printf("  %s\n", EscapeForTerminal(p).c_str());
    }
    if (o.end && ended.what == EndResult::kMarked) {
      std::printf(
          "  marked ended (%s): readers and rules stop waiting for more steps; a hook "
          "will not write this folder again\n",
          std::string(trial_format::kEndOfJobFile).c_str());
    } else if (o.end && ended.what == EndResult::kAlready) {
      std::printf("  already marked ended\n");
    }
  }
  if (refused) {
    std::fprintf(stderr,
                 "trainscope recover: not marking %s ended: it is still being written by %s; "
                 "stop that training first\n",
                 EscapeForTerminal(o.dir).c_str(), EscapeForTerminal(ended.who).c_str());
    return kExitFailure;
  }
  return rep.steps_lost > 0 ? kExitIncomplete : kExitOk;
}

}  // namespace

void RegisterRecover(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RecoverOptions>();
  auto* cmd = app.add_subcommand(
      "recover", "Publish the steps a killed training handed over and left in the trial's journal");
  cmd->add_option("dir", o->dir, "Trial folder")->required();
  cmd->add_flag("--json", o->json, "Print JSON instead of text");
  cmd->add_flag("--end", o->end,
                "Then mark the training ended (training_job_end.ts), unless a writer still holds "
                "the folder: readers and rules stop waiting for more steps (a hook will then "
                "refuse to write the folder again: do not use it to resume into it)");
  cmd->callback([o, exit_code] { *exit_code = RunRecover(*o); });
}

}  // namespace trainscope::cli
