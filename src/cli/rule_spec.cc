#include "cli/rule_spec.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "trainscope/env.h"

namespace trainscope::cli {

Result<RuleSpec> ParseRuleSpec(const std::string& text) {
  RuleSpec spec;
  spec.text = text;
  std::string body = text;
  if (auto at = body.find('@'); at != std::string::npos) {
    spec.actions = body.substr(at + 1);
    body = body.substr(0, at);
  }
  std::string params;
  if (auto colon = body.find(':'); colon != std::string::npos) {
    params = body.substr(colon + 1);
    body = body.substr(0, colon);
  }
  spec.name = body;
  if (spec.name.empty()) {
    return Status::InvalidArgument("rule spec '" + text +
                                   "' has no rule name: write NAME[:KEY=VALUE,...][@ACTIONS]");
  }
  std::string last_key;
  std::stringstream ss(params);
  std::string token;
  while (std::getline(ss, token, ',')) {
    auto eq = token.find('=');
    if (eq == std::string::npos) {
      if (last_key.empty()) {
        return Status::InvalidArgument("rule spec '" + text + "': parameter '" + token +
                                       "' has no value: write KEY=VALUE");
      }
      spec.params[last_key] += "," + token;  // continues a comma-separated list
      continue;
    }
    last_key = token.substr(0, eq);
    if (last_key.empty()) {
      return Status::InvalidArgument("rule spec '" + text + "': a parameter has no name");
    }
    spec.params[last_key] = token.substr(eq + 1);
  }
  return spec;
}

Result<std::vector<RuleSpec>> ReadRulesFile(const std::string& path) {
  auto text = Env::Default()->ReadFile(path);
  if (!text.ok()) {
    return Status::NotFound("rules file " + path + " cannot be read: " + text.status().message());
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const std::exception& e) {
    return Status::InvalidArgument("rules file " + path + " is not valid JSON: " + e.what());
  }
  if (j.is_object() && j.contains("rules")) j = j["rules"];
  if (!j.is_array()) {
    return Status::InvalidArgument("rules file " + path +
                                   ": expected a list of {\"name\", \"parameters\", \"actions\"}");
  }
  std::vector<RuleSpec> out;
  for (const auto& r : j) {
    if (!r.is_object() || !r.contains("name") || !r["name"].is_string()) {
      return Status::InvalidArgument("rules file " + path + ": every entry needs a \"name\"");
    }
    RuleSpec s;
    s.name = r["name"].get<std::string>();
    s.text = r.dump();
    if (r.contains("parameters")) {
      for (auto& [k, v] : r["parameters"].items()) {
        s.params[k] = v.is_string() ? v.get<std::string>() : v.dump();
      }
    }
    if (r.contains("actions")) {
      s.actions = r["actions"].is_string() ? r["actions"].get<std::string>() : r["actions"].dump();
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string FormatRuleSpec(const RuleSpec& spec) {
  std::string out = spec.python_file.empty() ? spec.name : spec.python_file + ":" + spec.name;
  bool first = true;
  for (const auto& [k, v] : spec.params) {
    out += first ? ":" : ",";
    out += k + "=" + v;
    first = false;
  }
  if (!spec.actions.empty()) out += "@" + spec.actions;
  return out;
}

std::vector<std::string> DefaultRuleNames() {
  // Every debugging rule that runs on what the hook saves with no input from the user (not
  // AllZero, TensorVariance: which tensors; ClassImbalance, Confusion: labels the script must
  // save; SimilarAcrossRuns: another trial), each quiet on the 30 healthy programs of
  // tests/training under `trainscope run --rules all` (docs/rules/README.md).
  return {"ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "DeadRelu",
          "SaturatedActivation", "WeightUpdateRatio", "PoorWeightInitialization", "UnchangedTensor",
          "Overfit", "Overtraining", "CheckInputImages", "NLPSequenceRatio", "StalledTrainingRule",
          // The profiler rules but BatchSize (a small batch on a big GPU may be the point, and
          // a sizing hint must not stop a healthy training under --action stop), with
          // ProfilerReport's two summaries.
          "LowGPUUtilization", "GPUMemoryIncrease", "MaxInitializationTime", "HostMemoryGrowth",
          "CPUBottleneck", "IOBottleneck", "LoadBalancing", "StepOutlier", "Dataloader",
          "OverallSystemUsage", "OverallFrameworkMetrics"};
}

}  // namespace trainscope::cli
