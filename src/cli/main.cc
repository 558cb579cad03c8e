// The `trainscope` command: run a training under the debugger and inspect trials.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "cli/commands.h"
#include "cli/table.h"

// A function try block: an exception from setting up the commands, or from a handler below, is an
// internal error too, never an abort.
int main(int argc, char** argv) try {
  CLI::App app{"trainscope: a local training debugger and profiler (smdebug-compatible)",
               "trainscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trainscope 0.1.0");
  int exit_code = trainscope::cli::kExitOk;
  trainscope::cli::RegisterRun(app, &exit_code);
  trainscope::cli::RegisterStatus(app, &exit_code);
  trainscope::cli::RegisterLs(app, &exit_code);
  trainscope::cli::RegisterRecover(app, &exit_code);
  trainscope::cli::RegisterRules(app, &exit_code);
  trainscope::cli::RegisterRuleWorker(app, &exit_code);
  trainscope::cli::RegisterTimeline(app, &exit_code);
  try {
    app.parse(argc, argv);  // runs the subcommand's callback
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : trainscope::cli::kExitUsage;
  } catch (const std::bad_alloc&) {
    // A last resort: the commands return errors, but a damaged or hostile file met by a
    // library may still exhaust memory; say so instead of aborting.
    std::fprintf(stderr,
                 "trainscope: out of memory (a damaged or very large file in the "
                 "folder?)\n");
    return trainscope::cli::kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainscope: internal error: %s\n",
                 trainscope::cli::EscapeForTerminal(e.what()).c_str());
    return trainscope::cli::kExitFailure;
  }
  return exit_code;
} catch (...) {
  std::fprintf(stderr, "trainscope: internal error (an unexpected exception)\n");
  return trainscope::cli::kExitFailure;
}
