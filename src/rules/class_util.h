// Helpers of ClassImbalance and Confusion: class ids from label and prediction tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "rules/builtin.h"

namespace trainscope::rules_internal {

// Largest class id accepted (beyond it a tensor is not a class tensor).
inline constexpr int64_t kMaxClassId = 100000;

// Class ids of a label or prediction tensor: rank >= 2 with a last dimension > 1 (one-hot labels,
// scores, logits, probabilities) or `argmax` -> argmax over the last axis; rank 0/1 -> the
// values rounded to integers (a single probability column in (0, 1) is thresholded at 0.5 when
// `argmax`). nullopt if a value is not a valid class id (negative, NaN, too large).
std::optional<std::vector<int64_t>> ClassIds(const Tensor& t, bool argmax);

}  // namespace trainscope::rules_internal
