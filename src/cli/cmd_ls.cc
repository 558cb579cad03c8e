// `trainscope ls DIR`: what a trial holds: workers, steps per mode, tensors with their steps,
// dtype and shape.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "cli/trial_folder.h"
#include "trainscope/trial.h"

namespace trainscope::cli {
namespace {

struct LsOptions {
  std::string dir;
  std::string mode = "GLOBAL";
  std::string regex;
  std::string collection;
  bool json = false;
  double wait_s = 0;
};

int RunLs(const LsOptions& o) {
  auto mode = ModeFromName(o.mode);
  if (!mode) {
    std::fprintf(stderr, "trainscope ls: unknown mode '%s': use TRAIN, EVAL, PREDICT or GLOBAL\n",
                 o.mode.c_str());
    return kExitUsage;
  }
  // Without --wait, a folder that is no trial at all is said to be one, with the way to wait.
  const std::string wait_hint =
      "; if a training is about to write there, wait for it with "
      "`trainscope ls " +
      o.dir + " --wait SECONDS`";
  if (o.wait_s <= 0) {
    if (Status s = CheckTrialFolder(o.dir); !s.ok()) {
      std::fprintf(stderr, "trainscope ls: %s%s\n", EscapeForTerminal(s.message()).c_str(),
                   EscapeForTerminal(wait_hint).c_str());
      return kExitFailure;
    }
  }
  auto trial = Trial::OpenWhenReady(
      o.dir, {}, std::chrono::milliseconds(static_cast<int64_t>(o.wait_s * 1000)));
  if (!trial.ok()) {
    std::string message = trial.status().ToString();
    if (trial.status().code() == StatusCode::kUnavailable) {
      // Still nothing to read after the wait: say what is missing, in command-line terms.
      Status s = CheckTrialFolder(o.dir);
      message = s.ok() ? o.dir +
                             " holds no saved step yet (no collections file: the training "
                             "has not saved its first step)"
                       : s.message();
      if (o.wait_s > 0) message += "; waited " + FormatDuration(o.wait_s);
      message += wait_hint;
    }
    std::fprintf(stderr, "trainscope ls: %s\n", EscapeForTerminal(message).c_str());
    return kExitFailure;
  }
  Trial& t = **trial;
  auto names = t.TensorNames(*mode, std::nullopt, o.regex, o.collection);
  if (!names.ok()) {
    std::fprintf(stderr, "trainscope ls: %s\n", names.status().ToString().c_str());
    return kExitFailure;
  }
  nlohmann::json j;
  j["trial"] = t.path();
  j["workers"] = t.workers();
  j["training_ended"] = t.training_ended();
  nlohmann::json steps = nlohmann::json::object();
  for (Mode m : t.Modes()) steps[std::string(ModeName(m))] = t.Steps(m);
  steps["GLOBAL"] = t.Steps(Mode::kGlobal);
  j["steps"] = steps;
  Table table({"tensor", "steps", "first", "last", "dtype", "shape"});
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& name : *names) {
    auto ts = t.TensorSteps(name, *mode);
    std::vector<int64_t> s = ts.ok() ? *ts : std::vector<int64_t>{};
    std::string dtype = "-", shape = "-";
    nlohmann::json jt{{"name", name}, {"steps", s}};
    if (!s.empty()) {
      auto v = t.Value(name, s.back(), *mode);
      if (v.ok()) {
        dtype = std::string(DTypeName(v->dtype));
        shape = ShapeToString(v->shape);
        jt["dtype"] = dtype;
        jt["shape"] = v->shape;
      } else {
        auto sh = t.Shape(name, s.back(), *mode);
        if (sh.ok()) shape = ShapeToString(*sh);
        dtype = "(reductions)";
      }
    }
    tensors.push_back(jt);
    table.AddRow({name, std::to_string(s.size()), s.empty() ? "-" : std::to_string(s.front()),
                  s.empty() ? "-" : std::to_string(s.back()), dtype, shape});
  }
  j["tensors"] = tensors;
  if (o.json) {
    std::cout << DumpJson(j) << "\n";
    return kExitOk;
  }
  std::cout << "trial   " << EscapeForTerminal(t.path())
            << (t.training_ended() ? "  (training ended)" : "  (in progress)") << "\nworkers ";
  for (const auto& w : t.workers()) std::cout << EscapeForTerminal(w) << " ";
  std::cout << "\n";
  for (auto& [m, st] : steps.items()) {
    auto v = st.get<std::vector<int64_t>>();
    std::cout << "steps   " << m << ": " << v.size();
    if (!v.empty()) std::cout << " (" << v.front() << " .. " << v.back() << ")";
    std::cout << "\n";
  }
  std::cout << "\n" << table.Render(60, OutputWidth());
  std::cout << table.size() << " tensors (" << ModeName(*mode) << " steps)\n";
  return kExitOk;
}

}  // namespace

void RegisterLs(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<LsOptions>();
  auto* cmd = app.add_subcommand("ls", "List what a trial holds: workers, steps and tensors");
  cmd->add_option("dir", o->dir, "Trial folder")->required();
  cmd->add_option("--mode", o->mode, "Steps of this mode: TRAIN, EVAL, PREDICT or GLOBAL");
  cmd->add_option("--regex", o->regex, "Only tensors whose name matches this regex");
  cmd->add_option("--collection", o->collection, "Only tensors of this collection");
  cmd->add_option("--wait", o->wait_s,
                  "Wait up to this many seconds for the trial to appear (the folder, and the "
                  "training's first saved step)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "Print JSON instead of a table");
  cmd->callback([o, exit_code] { *exit_code = RunLs(*o); });
}

}  // namespace trainscope::cli
