// Reductions of a tensor to a few numbers, with ONE definition used both when the hook saves them
// at write time and when the reader computes them from a raw tensor at read time.
//
// Definitions (docs/formats/reductions.md says why):
// - Over the flattened tensor, whatever its shape. Results are double. Sums are accumulated in
//   double, except that the AVX2 kernel for contiguous float32 (when neither std nor variance is
//   asked for) first adds runs of at most 16 values per SIMD lane in float32: sum, l1, l2, mean
//   and abs_mean are then within 16 float32 epsilons (1e-6) of the sum of |x| (of x^2 for l2),
//   as accurate as numpy's and torch's own float32 sums. min, max and the counts are exact.
// - std and variance are the POPULATION statistics (ddof = 0, as numpy's defaults): defined for
//   every non-empty tensor. (smdebug's hook used torch's unbiased ddof = 1, its reader numpy's
//   ddof = 0; we pick one.)
// - l1 = sum |x|, l2 = sqrt(sum x^2): norms of the flattened vector (never matrix norms).
// - abs_<r> applies r to |x|. For l1/l2, abs_ changes nothing.
// - NaN propagates into min, max, mean, std, variance, sum, prod, l1 and l2 (as numpy does);
//   nan_count, inf_count and zero_fraction count elements. Complex tensors reduce |x|.
// - An empty tensor gives NaN for min/max/mean/std/variance, 0 for sum/l1/l2/counts, 1 for prod.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/status.h"
#include "trainscope/tensor.h"

namespace trainscope {

enum class ReductionOp : uint8_t {
  kMin,
  kMax,
  kMean,
  kStd,
  kVariance,
  kSum,
  kProd,
  kL1,
  kL2,
  kNanCount,      // trainscope addition
  kInfCount,      // trainscope addition
  kZeroFraction,  // trainscope addition: fraction of elements == 0, in [0, 1]
};

struct Reduction {
  ReductionOp op;
  bool abs = false;
  bool operator==(const Reduction&) const = default;
};

// smdebug's names: "min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2", plus
// "nan_count", "inf_count", "zero_fraction". Norms also parse as "l1_norm", "l2_norm".
std::string_view ReductionOpName(ReductionOp op);
std::optional<ReductionOp> ReductionOpFromName(std::string_view name);
// Parses a config token: "abs_mean", "l2_norm", "abs_l1_norm", "nan_count"...
// InvalidArgument naming the token and listing the valid names on failure.
Result<Reduction> ParseReduction(std::string_view token);
// The tensor name smdebug gives a saved reduction: "smdebug/reductions/[abs_]<op>/<tensor>".
std::string ReductionTensorName(std::string_view tensor, Reduction r);
// Inverse of ReductionTensorName; nullopt if `name` is not a reduction tensor name.
struct ParsedReductionName {
  std::string tensor;
  Reduction reduction;
};
std::optional<ParsedReductionName> ParseReductionTensorName(std::string_view name);

// Everything one pass over a tensor yields.
struct TensorStats {
  int64_t count = 0;
  int64_t nan_count = 0;
  int64_t inf_count = 0;
  int64_t zero_count = 0;
  double min = 0, max = 0;          // of x (NaN if any NaN or empty)
  double abs_min = 0, abs_max = 0;  // of |x|
  double sum = 0, abs_sum = 0;
  double sum_sq = 0;                // sum of x^2 (for l2)
  double mean = 0, m2 = 0;          // m2 = sum of squared deviations from the mean (Chan et al.)
  double abs_mean = 0, abs_m2 = 0;
  double prod = 1, abs_prod = 1;

  double Value(Reduction r) const;
};

// Which optional parts of TensorStats a caller reads. count, nan_count, inf_count, min, max,
// sum, abs_sum, sum_sq, mean and abs_mean are always computed (one read of the tensor); the
// others cost extra work and may be left at 0 (1 for products) when not asked for: m2 (std,
// variance), abs_m2 (abs std/variance), the products, zero_count (zero_fraction), and
// abs_min/abs_max.
struct StatsNeeds {
  bool m2 = true;
  bool abs_m2 = true;
  bool prod = true;
  bool zeros = true;
  bool abs_extremes = true;
  static StatsNeeds All() { return {}; }
  // Exactly what `reductions` read (TensorStats::Value).
  static StatsNeeds For(const std::vector<Reduction>& reductions);
};

// One pass over any numeric view (strided allowed). InvalidArgument for kString.
// Contiguous float32 runs through an AVX2 kernel where the CPU has it (float32 runs as above,
// else 8 lanes converted to double and accumulated in double); other dtypes, and CPUs without
// AVX2, through the portable loop. The two agree within the bound above (a few ulps when std or
// variance is asked for).
Result<TensorStats> ComputeStats(const TensorView& v, StatsNeeds needs = StatsNeeds::All());
// The portable loop only (tests and benchmarks compare the kernels with it).
Result<TensorStats> ComputeStatsPortable(const TensorView& v);
// Convenience: ComputeStats then Value.
Result<double> ComputeReduction(const TensorView& v, Reduction r);

// A histogram: counts[i] covers [edges[i], edges[i+1]) (the last bin is closed). NaN and inf
// values are not counted (see TensorStats). edges.size() == counts.size() + 1.
struct Histogram {
  std::vector<double> edges;
  std::vector<double> counts;
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;  // of the finite values
};
// `bins` equal-width bins over [min, max] of the finite values (one bin if they are equal).
Result<Histogram> ComputeHistogram(const TensorView& v, int bins = 64);

}  // namespace trainscope
