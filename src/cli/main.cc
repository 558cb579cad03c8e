// The `trainscope` command: run a training under the debugger and inspect trials.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"trainscope: a local training debugger and profiler (smdebug-compatible)",
               "trainscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trainscope 0.1.0");
  int exit_code = trainscope::cli::kExitOk;
  trainscope::cli::RegisterRun(app, &exit_code);
  trainscope::cli::RegisterStatus(app, &exit_code);
  trainscope::cli::RegisterLs(app, &exit_code);
  trainscope::cli::RegisterRules(app, &exit_code);
  trainscope::cli::RegisterRuleWorker(app, &exit_code);
  trainscope::cli::RegisterTimeline(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : trainscope::cli::kExitUsage;
  }
  return exit_code;
}
