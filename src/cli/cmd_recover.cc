// `trainscope recover DIR`: publishes the steps a killed training handed over and left in the
// trial's journal (docs/formats/journal.md, Recovery).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/table.h"
#include "trainscope/writer.h"

namespace trainscope::cli {

namespace {

struct RecoverOptions {
  std::string dir;
  bool json = false;
};

int RunRecover(const RecoverOptions& o) {
  auto r = RecoverTrial(o.dir);
  if (!r.ok()) {
    std::fprintf(stderr, "trainscope recover: %s\n",
                 EscapeForTerminal(r.status().ToString()).c_str());
    return kExitFailure;
  }
  const RecoveryReport& rep = *r;
  if (o.json) {
    nlohmann::json j = {{"dir", o.dir},
                        {"steps_recovered", rep.steps_recovered},
                        {"steps_lost", rep.steps_lost},
                        {"slots_removed", rep.slots_removed},
                        {"workers_in_use", rep.workers_in_use},
                        {"problems", rep.problems}};
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
  cmd->callback([o, exit_code] { *exit_code = RunRecover(*o); });
}

}  // namespace trainscope::cli
