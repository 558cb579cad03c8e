// AVX2+FMA block statistics for float32 and float64 (see reductions_block.h). One pass gives
// sums, products, extremes and counts in four double lanes; a second pass over the same block
// (still in L1) gives the squared deviations. About 4x faster than the scalar loop.
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "core/reductions_block.h"

namespace trainscope::reductions_internal {
namespace {

#define TS_AVX2 __attribute__((target("avx2,fma")))

template <typename T>
TS_AVX2 inline __m256d Load4(const T* p) {
  if constexpr (sizeof(T) == 4) {
    return _mm256_cvtps_pd(_mm_loadu_ps(reinterpret_cast<const float*>(p)));
  } else {
    return _mm256_loadu_pd(reinterpret_cast<const double*>(p));
  }
}

TS_AVX2 inline double HorizontalSum(__m256d v) {
  __m128d lo = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(lo) + _mm_cvtsd_f64(_mm_unpackhi_pd(lo, lo));
}

template <typename T>
TS_AVX2 void Block(const T* p, size_t m, BlockStats* out) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  const __m256d vinf = _mm256_set1_pd(kInf);
  const __m256d vzero = _mm256_setzero_pd();
  __m256d sum = vzero, asum = vzero, sq = vzero;
  __m256d prod = _mm256_set1_pd(1.0), aprod = prod;
  __m256d mn = vinf, amn = vinf, mx = _mm256_set1_pd(-kInf), amx = mx;
  __m256i nan = _mm256_setzero_si256(), inf = nan, zero = nan;
  size_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const __m256d x = Load4(p + i);
    const __m256d a = _mm256_and_pd(x, abs_mask);
    sum = _mm256_add_pd(sum, x);
    asum = _mm256_add_pd(asum, a);
    sq = _mm256_fmadd_pd(x, x, sq);
    prod = _mm256_mul_pd(prod, x);
    aprod = _mm256_mul_pd(aprod, a);
    // min/max return their second operand when the first is NaN: NaN never wins.
    mn = _mm256_min_pd(x, mn);
    mx = _mm256_max_pd(x, mx);
    amn = _mm256_min_pd(a, amn);
    amx = _mm256_max_pd(a, amx);
    // A true comparison is all ones (-1 as an integer lane): subtracting it counts.
    nan = _mm256_sub_epi64(nan, _mm256_castpd_si256(_mm256_cmp_pd(x, x, _CMP_UNORD_Q)));
    inf = _mm256_sub_epi64(inf, _mm256_castpd_si256(_mm256_cmp_pd(a, vinf, _CMP_EQ_OQ)));
    zero = _mm256_sub_epi64(zero, _mm256_castpd_si256(_mm256_cmp_pd(x, vzero, _CMP_EQ_OQ)));
  }
  alignas(32) double lanes[6][4];
  alignas(32) int64_t counts[3][4];
  _mm256_store_pd(lanes[0], prod);
  _mm256_store_pd(lanes[1], aprod);
  _mm256_store_pd(lanes[2], mn);
  _mm256_store_pd(lanes[3], mx);
  _mm256_store_pd(lanes[4], amn);
  _mm256_store_pd(lanes[5], amx);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[0]), nan);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[1]), inf);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[2]), zero);
  BlockStats s;
  s.sum = HorizontalSum(sum);
  s.abs_sum = HorizontalSum(asum);
  s.sum_sq = HorizontalSum(sq);
  s.min = s.abs_min = kInf;
  s.max = s.abs_max = -kInf;
  for (int k = 0; k < 4; ++k) {
    s.prod *= lanes[0][k];
    s.abs_prod *= lanes[1][k];
    s.min = lanes[2][k] < s.min ? lanes[2][k] : s.min;
    s.max = lanes[3][k] > s.max ? lanes[3][k] : s.max;
    s.abs_min = lanes[4][k] < s.abs_min ? lanes[4][k] : s.abs_min;
    s.abs_max = lanes[5][k] > s.abs_max ? lanes[5][k] : s.abs_max;
    s.nan += counts[0][k];
    s.inf += counts[1][k];
    s.zero += counts[2][k];
  }
  for (; i < m; ++i) {
    const double x = static_cast<double>(p[i]), a = std::fabs(x);
    s.sum += x;
    s.abs_sum += a;
    s.sum_sq += x * x;
    s.prod *= x;
    s.abs_prod *= a;
    s.min = x < s.min ? x : s.min;
    s.max = x > s.max ? x : s.max;
    s.abs_min = a < s.abs_min ? a : s.abs_min;
    s.abs_max = a > s.abs_max ? a : s.abs_max;
    s.nan += std::isnan(x);
    s.inf += std::isinf(x);
    s.zero += (x == 0.0);
  }
  const double mean = s.sum / static_cast<double>(m), abs_mean = s.abs_sum / static_cast<double>(m);
  const __m256d vmean = _mm256_set1_pd(mean), vabs_mean = _mm256_set1_pd(abs_mean);
  __m256d m2 = vzero, am2 = vzero;
  for (i = 0; i + 4 <= m; i += 4) {
    const __m256d x = Load4(p + i);
    const __m256d d = _mm256_sub_pd(x, vmean);
    const __m256d e = _mm256_sub_pd(_mm256_and_pd(x, abs_mask), vabs_mean);
    m2 = _mm256_fmadd_pd(d, d, m2);
    am2 = _mm256_fmadd_pd(e, e, am2);
  }
  s.m2 = HorizontalSum(m2);
  s.abs_m2 = HorizontalSum(am2);
  for (; i < m; ++i) {
    const double x = static_cast<double>(p[i]);
    const double d = x - mean, e = std::fabs(x) - abs_mean;
    s.m2 += d * d;
    s.abs_m2 += e * e;
  }
  *out = s;
}

}  // namespace

bool HaveAvx2Kernels() {
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
}

void BlockStatsF32Avx2(const float* p, size_t m, BlockStats* out) { Block(p, m, out); }
void BlockStatsF64Avx2(const double* p, size_t m, BlockStats* out) { Block(p, m, out); }

}  // namespace trainscope::reductions_internal
