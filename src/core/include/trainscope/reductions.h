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

#include <cstddef>
#include <cstdint>
#include <initializer_list>
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

// Every op, in ReductionOp order.
inline constexpr ReductionOp kAllReductionOps[] = {
    ReductionOp::kMin,      ReductionOp::kMax,      ReductionOp::kMean,
    ReductionOp::kStd,      ReductionOp::kVariance, ReductionOp::kSum,
    ReductionOp::kProd,     ReductionOp::kL1,       ReductionOp::kL2,
    ReductionOp::kNanCount, ReductionOp::kInfCount, ReductionOp::kZeroFraction,
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

// The fields of TensorStats, in the order in which they cross from any producer of statistics
// other than ComputeStats (_core.STATS_FIELDS): the on-device paths, TorchTensorStats
// (trainscope/torch_hook.h) and trainscope.pytorch's _device.py, compute them with torch ops.
// ComputeStats is the reference they are tested against. Each field's definition, over the
// flattened tensor x of n elements (complex: |x|; bool: 0 or 1):
enum class StatsField : uint8_t {
  kCount,      // n
  kNanCount,   // how many x are NaN
  kInfCount,   // how many x are +inf or -inf
  kZeroCount,  // how many x == 0
  kMin,        // min x (read only when nan_count == 0 and n > 0)
  kMax,        // max x (likewise)
  kAbsMin,     // min |x| (likewise)
  kAbsMax,     // max |x| (likewise)
  kSum,        // sum x
  kAbsSum,     // sum |x|
  kSumSq,      // sum x^2
  kMean,       // sum x / n (read only when n > 0)
  kM2,         // sum (x - mean)^2: n times the population variance
  kAbsMean,    // sum |x| / n
  kAbsM2,      // sum (|x| - abs_mean)^2
  kProd,       // prod x (1 when n == 0)
  kAbsProd,    // prod |x|
};
inline constexpr size_t kNumStatsFields = 17;
// The field's name, as the TensorStats member: "count", "nan_count", ..., "abs_prod".
std::string_view StatsFieldName(StatsField f);

// A set of StatsFields. Thread safety: a value type.
class StatsFieldSet {
 public:
  constexpr StatsFieldSet() = default;
  constexpr StatsFieldSet(std::initializer_list<StatsField> fields) {
    for (StatsField f : fields) Add(f);
  }
  static constexpr StatsFieldSet All() {
    StatsFieldSet s;
    s.bits_ = (uint32_t{1} << kNumStatsFields) - 1;
    return s;
  }
  constexpr bool Has(StatsField f) const { return (bits_ >> static_cast<int>(f)) & 1; }
  constexpr void Add(StatsField f) { bits_ |= uint32_t{1} << static_cast<int>(f); }
  constexpr StatsFieldSet& operator|=(StatsFieldSet o) {
    bits_ |= o.bits_;
    return *this;
  }
  constexpr bool operator==(const StatsFieldSet&) const = default;
  // The fields in StatsField order.
  std::vector<StatsField> ToVector() const;

 private:
  uint32_t bits_ = 0;
};

// The fields TensorStats::Value(r) reads, count aside (every producer knows n without reading
// the elements, and Value reads it for most reductions): min -> {min, nan_count}, abs_std ->
// {abs_m2}, l2 -> {sum_sq}, ... A producer that fills these fields (and count) of a TensorStats
// gets from Value the reductions ComputeStats would give. The one table of what each reduction
// needs: StatsNeeds::For, the Python bindings (_core.stats_fields_for and the hook's plan) and
// the on-device paths take it from here.
StatsFieldSet FieldsRead(Reduction r);
StatsFieldSet FieldsRead(const std::vector<Reduction>& reductions);

// Everything one pass over a tensor yields.
struct TensorStats {
  int64_t count = 0;
  int64_t nan_count = 0;
  int64_t inf_count = 0;
  int64_t zero_count = 0;
  double min = 0, max = 0;          // of x (NaN if any NaN or empty)
  double abs_min = 0, abs_max = 0;  // of |x|
  double sum = 0, abs_sum = 0;
  double sum_sq = 0;        // sum of x^2 (for l2)
  double mean = 0, m2 = 0;  // m2 = sum of squared deviations from the mean (Chan et al.)
  double abs_mean = 0, abs_m2 = 0;
  double prod = 1, abs_prod = 1;

  double Value(Reduction r) const;
  // The field `f`; Set stores `v` into it (counts truncated to integers).
  double Get(StatsField f) const;
  void Set(StatsField f, double v);
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
  // Exactly what `reductions` read (TensorStats::Value): FieldsRead(reductions).
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
