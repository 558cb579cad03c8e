#include "trainscope/rule_registry.h"

#include <map>

#include "rules/builtin.h"
#include "rules/prof_rule.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {
namespace {

struct Registry {
  Mutex mu;
  std::map<std::string, std::pair<RuleInfo, RuleFactory>> rules TS_GUARDED_BY(mu);
};

// Built-in rules are listed explicitly (not registered by static initialisers, which a static
// library would drop when nothing else references their object file).
Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    using namespace rules_internal;
    const BuiltinDef defs[] = {
        VanishingGradientDef(),
        ExplodingTensorDef(),
        LossNotDecreasingDef(),
        OverfitDef(),
        OvertrainingDef(),
        SimilarAcrossRunsDef(),
        TensorVarianceDef(),
        UnchangedTensorDef(),
        CheckInputImagesDef(),
        NLPSequenceRatioDef(),
        PoorWeightInitializationDef(),
        SaturatedActivationDef(),
        DeadReluDef(),
        WeightUpdateRatioDef(),
        AllZeroDef(),
        ClassImbalanceDef(),
        ConfusionDef(),
        StalledTrainingRuleDef(),
    };
    const BuiltinDef profiler_defs[] = {
        CPUBottleneckDef(),
        IOBottleneckDef(),
        LowGPUUtilizationDef(),
        BatchSizeDef(),
        GPUMemoryIncreaseDef(),
        LoadBalancingDef(),
        MaxInitializationTimeDef(),
        StepOutlierDef(),
        DataloaderDef(),
        OverallSystemUsageDef(),
        OverallFrameworkMetricsDef(),
        HostMemoryGrowthDef(),
    };
    MutexLock lock(&r->mu);  // not shared yet; taken for the analysis
    for (BuiltinDef d : profiler_defs) {
      d.info.kind = "profiler";
      r->rules[d.info.name] = {d.info, d.factory};
    }
    for (const auto& d : defs) r->rules[d.info.name] = {d.info, d.factory};
    return r;
  }();
  return *registry;
}

}  // namespace

Result<std::unique_ptr<Rule>> CreateRule(const std::string& name, const RuleParams& params) {
  RuleFactory factory;
  {
    Registry& r = GetRegistry();
    MutexLock lock(&r.mu);
    auto it = r.rules.find(name);
    if (it == r.rules.end()) {
      std::string known;
      for (const auto& [n, entry] : r.rules) known += (known.empty() ? "" : ", ") + n;
      return Status::NotFound("unknown rule '" + name + "'; known rules: " + known);
    }
    factory = it->second.second;
  }
  return factory(params);
}

std::vector<std::string> RuleNames() {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  std::vector<std::string> names;
  for (const auto& [n, entry] : r.rules) names.push_back(n);
  return names;
}

Result<RuleInfo> DescribeRule(const std::string& name) {
  RuleInfo info;
  RuleFactory factory;
  {
    Registry& r = GetRegistry();
    MutexLock lock(&r.mu);
    auto it = r.rules.find(name);
    if (it == r.rules.end()) return Status::NotFound("unknown rule '" + name + "'");
    info = it->second.first;
    factory = it->second.second;
  }
  // The collections a rule with its default parameters needs (none if it has required ones).
  auto rule = factory({});
  if (rule.ok()) info.default_collections = (*rule)->RequiredCollections();
  return info;
}

void RegisterRule(RuleInfo info, RuleFactory factory) {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  std::string name = info.name;
  r.rules[name] = {std::move(info), std::move(factory)};
}

}  // namespace trainscope
