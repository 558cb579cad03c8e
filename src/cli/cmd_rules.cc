// `trainscope rules [NAME] [--json]`: the built-in rules, their parameters and defaults, and the
// collections each needs saved.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/rule_spec.h"
#include "cli/table.h"
#include "trainscope/rule_registry.h"

namespace trainscope::cli {
namespace {

nlohmann::json InfoJson(const RuleInfo& info) {
  nlohmann::json j{{"name", info.name}, {"kind", info.kind}, {"summary", info.summary}};
  j["parameters"] = nlohmann::json::array();
  for (const auto& p : info.params) {
    j["parameters"].push_back({{"name", p.name},
                               {"type", ParamTypeName(p.type)},
                               {"default", TypedParamValue(p.type, p.default_value)},
                               {"help", p.help}});
  }
  j["collections"] = nlohmann::json::array();
  // Merged as `run` writes them (one entry per collection).
  for (const auto& c : MergeCollectionRequests(info.default_collections)) {
    j["collections"].push_back(
        {{"name", c.name},
         {"include_regex", c.include_regex},
         {"save_interval", c.save_interval},
         {"start_step", c.start_step},
         {"end_step", c.end_step < 0 ? nlohmann::json() : nlohmann::json(c.end_step)},
         {"save_steps", c.save_steps},
         {"schedule", DescribeSaveSchedule(c)},
         {"reductions", c.reductions},
         {"save_raw_tensor", c.save_raw_tensor}});
  }
  return j;
}

int RunRules(const std::string& name, bool json) {
  std::vector<std::string> names = name.empty() ? RuleNames() : std::vector<std::string>{name};
  nlohmann::json all = nlohmann::json::array();
  for (const auto& n : names) {
    auto info = DescribeRule(n);
    if (!info.ok()) {
      std::fprintf(stderr, "trainscope rules: %s\n", info.status().message().c_str());
      return kExitUsage;
    }
    all.push_back(InfoJson(*info));
  }
  if (json) {
    std::cout << DumpJson(all) << "\n";
    return kExitOk;
  }
  if (name.empty()) {
    Table t({"rule", "kind", "default", "what it catches"});
    auto defaults = DefaultRuleNames();
    for (const auto& r : all) {
      bool is_default = std::find(defaults.begin(), defaults.end(), r["name"].get<std::string>()) !=
                        defaults.end();
      t.AddRow({r["name"], r["kind"], is_default ? "yes" : "", r["summary"]});
    }
    std::cout << t.Render(60, OutputWidth())
              << "\n`trainscope rules NAME` shows a rule's parameters; "
              << "use them as --rule NAME:KEY=VALUE,...\n";
    return kExitOk;
  }
  const auto& r = all[0];
  std::cout << r["name"].get<std::string>() << " (" << r["kind"].get<std::string>()
            << " rule): " << r["summary"].get<std::string>() << "\n\n";
  Table t({"parameter", "default", "meaning"});
  if (auto info = DescribeRule(name); info.ok()) {
    for (const auto& p : info->params) t.AddRow({p.name, p.default_value, p.help});
  }
  std::cout << t.Render(60, OutputWidth());
  if (!r["collections"].empty()) {
    std::cout << "\nSaved for it under `trainscope run`:\n";
    for (const auto& c : r["collections"]) {
      std::cout << "  " << c["name"].get<std::string>() << " " << c["schedule"].get<std::string>();
      if (!c["include_regex"].empty()) std::cout << ", regex " << c["include_regex"].dump();
      if (!c["reductions"].empty()) std::cout << ", reductions " << c["reductions"].dump();
      std::cout << "\n";
    }
  }
  std::cout << "\nDetails: docs/rules/" << r["name"].get<std::string>() << ".md\n";
  return kExitOk;
}

}  // namespace

void RegisterRules(CLI::App& app, int* exit_code) {
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("rules", "List the built-in rules, or one rule's parameters");
  cmd->add_option("name", *name, "A rule name");
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([=] { *exit_code = RunRules(*name, *json); });
}

}  // namespace trainscope::cli
