// Diagnose (trainscope/diagnosis.h): root cause first, the findings it explains under it.
#include "trainscope/diagnosis.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace trainscope {
namespace {

// The stages, upstream first; kOther judges nothing in the chain.
enum Stage { kInput, kInit, kDivergence, kUnits, kGradients, kLoss, kGeneralisation, kOther };

constexpr std::array<std::string_view, kOther + 1> kStageNames = {
    "input data", "initialisation", "divergence",     "units",
    "gradients",  "loss",           "generalisation", "other"};

Stage StageOf(const RuleFinding& f) {
  struct Entry {
    std::string_view rule;
    Stage stage;
  };
  static constexpr Entry kRules[] = {{"CheckInputImages", kInput},
                                     {"NLPSequenceRatio", kInput},
                                     {"ClassImbalance", kInput},
                                     {"AllZero", kInput},
                                     {"PoorWeightInitialization", kInit},
                                     {"ExplodingTensor", kDivergence},
                                     {"DeadRelu", kUnits},
                                     {"SaturatedActivation", kUnits},
                                     {"VanishingGradient", kGradients},
                                     {"WeightUpdateRatio", kGradients},
                                     {"UnchangedTensor", kGradients},
                                     {"TensorVariance", kGradients},
                                     {"StalledTrainingRule", kLoss},
                                     {"Overfit", kGeneralisation},
                                     {"Overtraining", kGeneralisation},
                                     {"Confusion", kGeneralisation},
                                     {"SimilarAcrossRuns", kGeneralisation}};
  if (f.rule == "Overfit" && f.condition.find("diverged") != std::string::npos) {
    return kDivergence;  // a validation loss that blew up is the weights diverging
  }
  if (f.rule == "LossNotDecreasing") {
    // A divergence or a rise is the loss blowing up; the rest is a loss that does not learn.
    const bool blow_up = f.condition.find("diverg") != std::string::npos ||
                         f.condition.find("rose") != std::string::npos;
    return blow_up ? kDivergence : kLoss;
  }
  for (const auto& e : kRules) {
    if (f.rule == e.rule) return e.stage;
  }
  return kOther;
}

// Steps order findings; a finding without a step comes after every finding with one.
int64_t StepKey(const RuleFinding& f) { return f.step >= 0 ? f.step : INT64_MAX; }

}  // namespace

std::string DiagnosisStage(const RuleFinding& f) { return std::string(kStageNames[StageOf(f)]); }

std::vector<Diagnosis> Diagnose(std::vector<RuleFinding> findings) {
  std::stable_sort(
      findings.begin(), findings.end(),
      [](const RuleFinding& a, const RuleFinding& b) { return StepKey(a) < StepKey(b); });
  std::vector<std::pair<Stage, RuleFinding>> chain;
  std::vector<Diagnosis> out, others;
  for (auto& f : findings) {
    const Stage s = StageOf(f);
    if (s == kOther) {
      others.push_back(Diagnosis{std::move(f), std::string(kStageNames[kOther]), {}});
    } else {
      chain.emplace_back(s, std::move(f));
    }
  }
  while (!chain.empty()) {
    // The cause: the most upstream of the findings simultaneous with the earliest (chain is in
    // step order), the earliest of them on a tie.
    const int64_t first = StepKey(chain.front().second);
    size_t lead = 0;
    for (size_t i = 1; i < chain.size(); ++i) {
      const int64_t step = StepKey(chain[i].second);
      if (first != INT64_MAX && (step == INT64_MAX || step - first >= kCoincidentSteps)) break;
      if (chain[i].first < chain[lead].first) lead = i;
    }
    const Stage stage = chain[lead].first;
    Diagnosis d{std::move(chain[lead].second), std::string(kStageNames[stage]), {}};
    std::vector<std::pair<Stage, RuleFinding>> rest;
    for (size_t i = 0; i < chain.size(); ++i) {
      if (i == lead) continue;
      if (chain[i].first >= stage) {
        d.evidence.push_back(std::move(chain[i].second));
      } else {
        rest.push_back(std::move(chain[i]));  // upstream and later: a problem of its own
      }
    }
    out.push_back(std::move(d));
    chain = std::move(rest);
  }
  for (auto& d : others) out.push_back(std::move(d));
  return out;
}

}  // namespace trainscope
