#include "rules/class_util.h"

namespace trainscope::rules_internal {

std::optional<std::vector<int64_t>> ClassIds(const Tensor& t, bool argmax) {
  if (!IsNumeric(t.dtype)) return std::nullopt;
  const std::vector<double> x = ToDoubles(t);
  std::vector<int64_t> out;
  const bool matrix = t.shape.size() >= 2 && t.shape.back() > 1;
  if (matrix) {
    const int64_t classes = t.shape.back();
    const int64_t rows = classes > 0 ? t.num_elements() / classes : 0;
    out.reserve(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      int64_t best = 0;
      double best_v = x[static_cast<size_t>(r * classes)];
      for (int64_t c = 1; c < classes; ++c) {
        const double v = x[static_cast<size_t>(r * classes + c)];
        if (v > best_v || std::isnan(best_v)) {
          best_v = v;
          best = c;
        }
      }
      if (std::isnan(best_v)) return std::nullopt;
      out.push_back(best);
    }
    return out;
  }
  out.reserve(x.size());
  for (double v : x) {
    if (!std::isfinite(v)) return std::nullopt;
    double c =
        argmax && !IsIntegral(t.dtype) && v > 0 && v < 1 ? (v >= 0.5 ? 1.0 : 0.0) : std::round(v);
    if (c < 0 || c > static_cast<double>(kMaxClassId)) return std::nullopt;
    out.push_back(static_cast<int64_t>(c));
  }
  return out;
}

}  // namespace trainscope::rules_internal
