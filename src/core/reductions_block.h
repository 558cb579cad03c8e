// Statistics of one block of elements, the unit ComputeStats (reductions.cc) merges: scalar code
// for every dtype, and AVX2+FMA kernels for float32 and float64 (reductions_avx2.cc), chosen at
// run time when the CPU has them. Both compute the same quantities with the same semantics
// (NaN never wins a min or max but is counted; m2 about the block's own mean); they may differ in
// the last bits of sums (summation order, fused multiply-add).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trainscope::reductions_internal {

struct BlockStats {
  double sum = 0, abs_sum = 0, sum_sq = 0, prod = 1, abs_prod = 1;
  double min, max, abs_min, abs_max;  // +inf/-inf when every element is NaN
  int64_t nan = 0, inf = 0, zero = 0;
  double m2 = 0, abs_m2 = 0;  // sums of squared deviations from the block's mean (of x, of |x|)
};

// True if the AVX2+FMA kernels can run on this CPU.
bool HaveAvx2Kernels();
// REQUIRES: HaveAvx2Kernels(), m >= 1.
void BlockStatsF32Avx2(const float* p, size_t m, BlockStats* out);
void BlockStatsF64Avx2(const double* p, size_t m, BlockStats* out);

}  // namespace trainscope::reductions_internal
