// The loss series of a step: which series each saved loss tensor belongs to, in which order
// (docs/rules/LossNotDecreasing.md, "Closure evaluations").
//
// optimizer.step(closure) with LBFGS evaluates the loss up to max_iter (20) times in one step,
// and the hook saves the evaluations as MSELoss_output_0 ... MSELoss_output_19. Where the trial
// records them (index meta.closure_evaluations, docs/formats/index.md), they are one loss in
// order: the r-th output of a loss in each evaluation of one optimizer step belongs to one series,
// named after that output in the step's first evaluation ("MSELoss_output_0"), and its values are
// in evaluation order. Every other tensor is a series of its own (one value a step), as without
// the record: a GAN's two calls of one criterion in a step stay two series.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/trial.h"

namespace trainscope::rules_internal {

// One saved loss tensor of a step, placed in its series.
struct LossPoint {
  std::string tensor;       // the saved tensor
  std::string series;       // the series it belongs to (its own name outside a closure record)
  int64_t evaluation = -1;  // its closure evaluation within the step (0, 1, ...); -1: none
  std::string optimizer;    // the optimizer whose closure saved it ("" outside a record)
};

// The tensors of `names` (the selected losses saved at one step) as points of their series:
// first those of the closure record `closures` (the step's, Trial::ClosureSteps), optimizer step
// by optimizer step, each in evaluation order; then the others, in the order of `names`. A name
// the record lists but `names` lacks is left out; a name listed twice counts at its first place.
std::vector<LossPoint> OrderLossTensors(const std::vector<std::string>& names,
                                        const std::vector<ClosureStep>& closures);

// "MSELoss_output" for "MSELoss_output_12": the name without a trailing "_<digits>" (the name
// itself when it has none).
std::string IndexedBase(const std::string& name);

}  // namespace trainscope::rules_internal
