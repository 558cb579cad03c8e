// Diagnose: one diagnosis from the findings of many rules (docs/rules/README.md, "One
// diagnosis"). When one problem makes several rules fire (a learning rate far too high: the loss
// blows up, then units die, then gradients vanish), a user needs the root cause first and the
// other findings as its evidence, not a pile of symptoms in alphabetical order.
//
// The model: each built-in rule judges a stage of training, and a problem propagates downstream,
// never up:
//   input data      CheckInputImages, NLPSequenceRatio, ClassImbalance, AllZero
//   initialisation  PoorWeightInitialization
//   divergence      ExplodingTensor, LossNotDecreasing when it finds a divergence or a rise
//   units           DeadRelu, SaturatedActivation
//   gradients       VanishingGradient, WeightUpdateRatio, UnchangedTensor, TensorVariance
//   loss            LossNotDecreasing (not learning), StalledTrainingRule
//   generalisation  Overfit, Overtraining, Confusion, SimilarAcrossRuns
// Profiler rules, custom rules and unknown names judge nothing in this chain: each is a
// diagnosis of its own.
//
// The root cause is the finding whose signal moved first: the earliest step, findings less than
// kCoincidentSteps apart counting as simultaneous (the default collections are saved every 10
// steps, so a rule can see a signal up to 10 steps after another saw its own), and among
// simultaneous ones the most upstream stage. Every later finding of the same or a downstream
// stage is evidence under it; a finding upstream of it that came later (a separate problem)
// starts a diagnosis of its own, by the same ordering. Diagnoses come in the order of their
// cause's step (then stage); those of the "other" stage last, by step.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/finding.h"

namespace trainscope {

// A diagnosis reads of each finding (RuleFinding, finding.h; one rule's first, as events.jsonl
// gives it) its rule, step (-1: none, a profiler finding), tensor, condition (which tells
// LossNotDecreasing's kinds apart), explanation and recommendation.

struct Diagnosis {
  RuleFinding cause;
  std::string stage;                  // the cause's stage ("divergence", ...; "other")
  std::vector<RuleFinding> evidence;  // in order of step
};

inline constexpr int64_t kCoincidentSteps = 10;

// The stage of a finding (see above): "input data", "initialisation", "divergence", "units",
// "gradients", "loss", "generalisation", or "other".
std::string DiagnosisStage(const RuleFinding& f);

// The findings grouped into diagnoses (see above); every finding appears exactly once, as a
// cause or as evidence.
std::vector<Diagnosis> Diagnose(std::vector<RuleFinding> findings);

}  // namespace trainscope
