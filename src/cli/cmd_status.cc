// `trainscope status DIR [--json]`: the rules' statuses of a running or finished trial.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/rule_status.h"
#include "cli/table.h"
#include "trainscope/env.h"
#include "trainscope/trial_format.h"

namespace trainscope::cli {

nlohmann::json StatusesJson(const std::vector<RuleStatusView>& rules) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rules) {
    nlohmann::json j = r.raw.is_object() ? r.raw : nlohmann::json::object();
    j["rule"] = r.rule;
    j["status"] = r.status;
    if (!r.first_finding.is_null()) j["first_finding"] = r.first_finding;
    out.push_back(j);
  }
  return out;
}

std::string RenderStatusTable(const std::vector<RuleStatusView>& rules) {
  Table t({"rule", "status", "findings", "first at step", "what it saw"});
  for (const auto& r : rules) {
    std::string what = r.message;
    if (r.first_finding.is_object()) what = r.first_finding.value("explanation", what);
    t.AddRow({r.rule, r.status, std::to_string(r.findings),
              r.first_finding_step >= 0 ? std::to_string(r.first_finding_step) : "-", what});
  }
  return t.Render(90);
}

int RulesExitCode(const std::vector<RuleStatusView>& rules) {
  bool issues = false, error = false;
  for (const auto& r : rules) {
    issues |= r.status == "IssuesFound";
    error |= r.status == "Error";
  }
  return issues ? kExitIssuesFound : error ? kExitRuleError : kExitOk;
}

namespace {

int RunStatus(const std::string& dir, bool json) {
  Env* env = Env::Default();
  if (!env->IsDirectory(dir)) {
    std::fprintf(stderr, "trainscope status: %s is not a folder: give a trial folder\n",
                 dir.c_str());
    return kExitFailure;
  }
  auto rules = ReadRuleStatuses(dir);
  auto stop = ReadStopRequest(dir);
  bool ended = env->FileExists(JoinPath(dir, trial_format::kEndOfJobFile));
  if (json) {
    nlohmann::json j{{"trial", dir}, {"training_ended", ended}, {"rules", StatusesJson(rules)}};
    j["stop_request"] = stop ? *stop : nlohmann::json(nullptr);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "trial " << dir << (ended ? "  (training ended)" : "  (in progress)") << "\n\n";
    if (rules.empty()) {
      std::cout << "no rule has run on this trial (run one with `trainscope run --rule NAME -- ...`)\n";
    } else {
      std::cout << RenderStatusTable(rules);
    }
    if (stop) {
      std::cout << "\ntraining was asked to stop by " << stop->value("rule", std::string("?"))
                << " at step " << stop->value("step", int64_t{-1}) << ": "
                << stop->value("explanation", std::string()) << "\n";
    }
  }
  return RulesExitCode(rules);
}

}  // namespace

void RegisterStatus(CLI::App& app, int* exit_code) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("status", "Show the rules' statuses of a trial");
  cmd->add_option("dir", *dir, "Trial folder")->required();
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([=] { *exit_code = RunStatus(*dir, *json); });
}

}  // namespace trainscope::cli
