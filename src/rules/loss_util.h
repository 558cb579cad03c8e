// Helpers of the loss-based rules (LossNotDecreasing, Overfit, Overtraining,
// PoorWeightInitialization): which tensors are losses, and reading a scalar.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rules/builtin.h"

namespace trainscope::rules_internal {

// smdebug's PyTorch "losses" collection regex (reference smdebug.md 3.7).
inline constexpr const char* kLossRegex = "[Ll]oss_(?!input).*output";

// The "losses" collection and kLossRegex.
inline TensorSelection LossSelection() {
  TensorSelection s;
  s.collections = {"losses"};
  s.regexes = {kLossRegex};
  return s;
}

// Modes whose steps train the model: TRAIN, and GLOBAL (a hook that never set a mode).
inline bool IsTrainLike(Mode m) { return m == Mode::kTrain || m == Mode::kGlobal; }

// The mean of a tensor at a step (a loss is a scalar); nullopt when it was not saved there or is
// not finite (ExplodingTensor reports those).
inline Result<std::optional<double>> ScalarAt(RuleData& data, const std::string& name,
                                              int64_t step) {
  auto v = data.ReductionValue(name, step, Reduction{ReductionOp::kMean, false});
  if (!v.ok()) {
    if (IsNoData(v.status())) return std::optional<double>();
    return v.status();
  }
  if (!std::isfinite(*v)) return std::optional<double>();
  return std::optional<double>(*v);
}

// The losses collection request of these rules: every step, raw scalars.
inline CollectionRequest LossesRequest() {
  CollectionRequest r;
  r.name = "losses";
  r.save_interval = 1;
  return r;
}

}  // namespace trainscope::rules_internal
