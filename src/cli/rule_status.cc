#include "cli/rule_status.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "trainscope/env.h"
#include "trainscope/rule_output_format.h"
#include "trainscope/stop_signal.h"

namespace trainscope::cli {
std::optional<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

namespace {

nlohmann::json FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) return j;
  }
  return nullptr;
}

}  // namespace

std::vector<RuleStatusView> ReadRuleStatuses(const std::string& trial_dir) {
  namespace fmt = rule_output_format;
  Env* env = Env::Default();
  std::string root = JoinPath(trial_dir, fmt::kRuleOutputDir);
  std::vector<RuleStatusView> out;
  auto kids = env->GetChildren(root);
  if (!kids.ok()) return out;
  std::sort(kids->begin(), kids->end());
  for (const auto& name : *kids) {
    std::string dir = JoinPath(root, name);
    if (!env->IsDirectory(dir)) continue;
    RuleStatusView v;
    v.rule = name;
    if (auto j = ReadJsonFile(JoinPath(dir, fmt::kStatusFile))) {
      v.raw = *j;
      v.status = j->value("status", v.status);
      v.message = j->value("message", "");
      v.last_step = j->value("last_step", int64_t{-1});
      v.findings = j->value("findings", int64_t{0});
      v.first_finding_step = j->value("first_finding_step", int64_t{-1});
      v.finished = j->value("finished", false);
    }
    if (v.findings > 0) v.first_finding = FirstLine(JoinPath(dir, fmt::kEventsFile));
    out.push_back(std::move(v));
  }
  return out;
}

std::optional<nlohmann::json> ReadStopRequest(const std::string& trial_dir) {
  return ReadJsonFile(StopSignal::PathFor(trial_dir));
}

}  // namespace trainscope::cli
