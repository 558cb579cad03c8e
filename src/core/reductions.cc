#include "trainscope/reductions.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "trainscope/helper_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace trainscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct OpName {
  ReductionOp op;
  std::string_view name;
};
constexpr OpName kOpNames[] = {
    {ReductionOp::kMin, "min"},
    {ReductionOp::kMax, "max"},
    {ReductionOp::kMean, "mean"},
    {ReductionOp::kStd, "std"},
    {ReductionOp::kVariance, "variance"},
    {ReductionOp::kSum, "sum"},
    {ReductionOp::kProd, "prod"},
    {ReductionOp::kL1, "l1"},
    {ReductionOp::kL2, "l2"},
    {ReductionOp::kNanCount, "nan_count"},
    {ReductionOp::kInfCount, "inf_count"},
    {ReductionOp::kZeroFraction, "zero_fraction"},
};

// Element loaders: every dtype to double (complex: magnitude).
template <typename T>
inline double Load(const T* p, size_t i) {
  return static_cast<double>(p[i]);
}

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
template <>
inline double Load<F16>(const F16* p, size_t i) {
  return HalfToFloat(p[i].bits);
}
template <>
inline double Load<BF16>(const BF16* p, size_t i) {
  return BFloat16ToFloat(p[i].bits);
}
template <>
inline double Load<std::complex<float>>(const std::complex<float>* p, size_t i) {
  return std::abs(std::complex<double>(p[i]));
}
template <>
inline double Load<std::complex<double>>(const std::complex<double>* p, size_t i) {
  return std::abs(p[i]);
}
template <>
inline double Load<bool>(const bool* p, size_t i) {
  // Read the byte, not a bool: bytes from a file may hold values other than 0 and 1, and
  // loading those as bool is undefined behaviour (any non-zero byte is true, as in numpy).
  return reinterpret_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
}

// The tensor is reduced in blocks of up to kBlock elements: each block in cache-resident passes
// (the second, for the squared deviations, reads the block again from L1), then merged into the
// running statistics with Chan et al.'s parallel variance formula.
constexpr size_t kBlock = 2048;
// Large tensors are reduced in chunks of kChunk elements (256 KiB of float32: an L2's worth),
// spread over the helper threads (core/helper_pool.h) and merged in order.
constexpr size_t kChunk = 32 * kBlock;
constexpr double kInf = std::numeric_limits<double>::infinity();

// What one block yields.
struct Block {
  double sum = 0, asum = 0, sq = 0, prod = 1, aprod = 1, m2 = 0, am2 = 0;
  double min = kInf, max = -kInf, amin = kInf, amax = -kInf;
  int64_t nan = 0, inf = 0, zero = 0;
};

// Merges the statistics of a later chunk `c` into `s` (Chan et al. for the moments).
void MergeStats(const TensorStats& c, TensorStats* s) {
  if (c.count == 0) return;
  if (s->count == 0) {
    *s = c;
    return;
  }
  const double na = static_cast<double>(s->count), nb = static_cast<double>(c.count);
  const double nt = na + nb;
  const double d = c.mean - s->mean, ad = c.abs_mean - s->abs_mean;
  s->mean += d * nb / nt;
  s->m2 += c.m2 + d * d * na * nb / nt;
  s->abs_mean += ad * nb / nt;
  s->abs_m2 += c.abs_m2 + ad * ad * na * nb / nt;
  s->count += c.count;
  s->sum += c.sum;
  s->abs_sum += c.abs_sum;
  s->sum_sq += c.sum_sq;
  s->prod *= c.prod;
  s->abs_prod *= c.abs_prod;
  s->nan_count += c.nan_count;
  s->inf_count += c.inf_count;
  s->zero_count += c.zero_count;
  s->min = c.min < s->min ? c.min : s->min;
  s->max = c.max > s->max ? c.max : s->max;
  s->abs_min = c.abs_min < s->abs_min ? c.abs_min : s->abs_min;
  s->abs_max = c.abs_max > s->abs_max ? c.abs_max : s->abs_max;
}

// Merges one block of m elements into the running statistics.
void Merge(const Block& b, size_t m, TensorStats* s) {
  TensorStats c;
  const double nb = static_cast<double>(m);
  c.count = static_cast<int64_t>(m);
  c.sum = b.sum;
  c.abs_sum = b.asum;
  c.sum_sq = b.sq;
  c.mean = b.sum / nb;
  c.abs_mean = b.asum / nb;
  c.m2 = b.m2;
  c.abs_m2 = b.am2;
  c.prod = b.prod;
  c.abs_prod = b.aprod;
  c.nan_count = b.nan;
  c.inf_count = b.inf;
  c.zero_count = b.zero;
  c.min = b.min;
  c.max = b.max;
  c.abs_min = b.amin;
  c.abs_max = b.amax;
  MergeStats(c, s);
}

// Scalar part of a block: elements [i, m) of p, added to b.
template <typename T>
inline void AddScalar(const T* p, size_t i, size_t m, Block* b) {
  for (; i < m; ++i) {
    const double x = Load<T>(p, i);
    const double a = std::fabs(x);
    b->sum += x;
    b->asum += a;
    b->sq += x * x;
    b->prod *= x;
    b->aprod *= a;
    b->min = x < b->min ? x : b->min;
    b->max = x > b->max ? x : b->max;
    b->amin = a < b->amin ? a : b->amin;
    b->amax = a > b->amax ? a : b->amax;
    b->nan += std::isnan(x);
    b->inf += std::isinf(x);
    b->zero += (x == 0.0);
  }
}

// The portable loop: every dtype, every statistic.
template <typename T>
void Accumulate(const T* data, size_t n, TensorStats* s) {
  double block[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t m = std::min(kBlock, n - start);
    const T* p = data + start;
    Block b;
    AddScalar(p, 0, m, &b);
    for (size_t i = 0; i < m; ++i) block[i] = Load<T>(p, i);
    const double bmean = b.sum / static_cast<double>(m);
    const double bamean = b.asum / static_cast<double>(m);
    for (size_t i = 0; i < m; ++i) {
      const double d = block[i] - bmean;
      const double ad = std::fabs(block[i]) - bamean;
      b.m2 += d * d;
      b.am2 += ad * ad;
    }
    Merge(b, m, s);
  }
}

#if defined(__x86_64__)
bool HasAvx2Fma() {
  static const bool kHas = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return kHas;
}

__attribute__((target("avx2,fma"))) inline double HSum(__m256d v) {
  const __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
  const __m128d s = _mm_add_pd(lo, hi);
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

__attribute__((target("avx2,fma"))) inline int64_t HSumI32(__m256i v) {
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  int64_t t = 0;
  for (int32_t x : lanes) t += x;
  return t;
}

template <bool kMax>
__attribute__((target("avx2,fma"))) inline double HExtreme(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float r = lanes[0];
  for (float x : lanes) r = kMax ? (x > r ? x : r) : (x < r ? x : r);
  return r;
}

// Contiguous float32 with AVX2, block by block (kBlock elements). The vector part of a block
// (a multiple of 8 elements) goes through BlockF32Float when it can, else BlockF32Double; the
// tail through AddScalar; then the deviations pass (std, variance) and the merge.
//
// BlockF32Float, the common case: sums, |x| sums and squares accumulate in float32 in 16 lanes
// (two 8-lane accumulators) over runs of kRun elements, so each float partial adds at most
// kRun / 16 = 16 values; each run's partials are then added in double. The relative error of a
// sum is at most ~16 float32 epsilons of the sum of |x| (1e-6; typically 1e-7), as good as
// numpy's and torch's own float32 sums, at the memory's speed instead of the double kernel's.
// A block goes through BlockF32Double (every sum in double) instead when std or variance are
// asked for, or when the float results would not be exact enough: a NaN or an inf in it (the
// counts are needed), a float32 overflow of a partial, or every |x| below 2^-40 (squares near
// float32's underflow).
constexpr size_t kRun = 256;
constexpr double kTinyBlock = 0x1p-40;

// min, max, |x| extremes (kAbsExt) and zeros (kZeros) of a block's vectors, compared as floats
// (exact: the conversion to double is monotonic). min_ps(x, acc) keeps acc when x is NaN; a NaN
// anywhere makes min/max NaN in Value() anyway.
template <bool kZeros, bool kAbsExt>
struct VecExtremes {
  __m256 mn, mx, amn, amx;
  __m256i czero;

  __attribute__((target("avx2,fma"))) VecExtremes() {
    mn = amn = _mm256_set1_ps(std::numeric_limits<float>::infinity());
    mx = amx = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    czero = _mm256_setzero_si256();
  }
  // x and ax = |x|.
  __attribute__((target("avx2,fma"), always_inline)) void Add(__m256 x, __m256 ax) {
    mn = _mm256_min_ps(x, mn);
    mx = _mm256_max_ps(x, mx);
    if constexpr (kAbsExt) {
      amn = _mm256_min_ps(ax, amn);
      amx = _mm256_max_ps(ax, amx);
    }
    if constexpr (kZeros) {
      const __m256 eq = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ);
      czero = _mm256_sub_epi32(czero, _mm256_castps_si256(eq));
    }
  }
  __attribute__((target("avx2,fma"))) void Store(Block* b) const {
    b->min = HExtreme<false>(mn);
    b->max = HExtreme<true>(mx);
    if constexpr (kAbsExt) {
      b->amin = HExtreme<false>(amn);
      b->amax = HExtreme<true>(amx);
    }
    if constexpr (kZeros) b->zero = HSumI32(czero);
  }
};

// acc + the 8 floats of v, widened to double.
__attribute__((target("avx2,fma"))) inline __m256d AddWidened(__m256d acc, __m256 v) {
  return _mm256_add_pd(acc, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                                          _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
}

// m8: a multiple of 8, > 0. False when the block must be recomputed in double (see above).
template <bool kZeros, bool kAbsExt>
__attribute__((target("avx2,fma"))) bool BlockF32Float(const float* p, size_t m8, Block* b) {
  const __m256 fabs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 fzero = _mm256_setzero_ps();
  __m256d dsum = _mm256_setzero_pd(), dasum = dsum, dsq = dsum;
  VecExtremes<kZeros, kAbsExt> ext;
  // One vector into one set of float accumulators.
  auto add = [&](const float* at, __m256& sum, __m256& asum, __m256& sq)
      __attribute__((target("avx2,fma"), always_inline)) {
    const __m256 x = _mm256_loadu_ps(at);
    const __m256 ax = _mm256_and_ps(x, fabs);
    sum = _mm256_add_ps(sum, x);
    asum = _mm256_add_ps(asum, ax);
    sq = _mm256_fmadd_ps(x, x, sq);
    ext.Add(x, ax);
  };
  for (size_t r = 0; r < m8; r += kRun) {
    const size_t e = std::min(m8, r + kRun);
    // Two sets of accumulators hide the adds' latency.
    __m256 s0 = fzero, s1 = fzero, a0 = fzero, a1 = fzero, q0 = fzero, q1 = fzero;
    size_t i = r;
    for (; i + 16 <= e; i += 16) {
      add(p + i, s0, a0, q0);
      add(p + i + 8, s1, a1, q1);
    }
    if (i < e) add(p + i, s0, a0, q0);  // one vector left
    dsum = AddWidened(dsum, _mm256_add_ps(s0, s1));
    dasum = AddWidened(dasum, _mm256_add_ps(a0, a1));
    dsq = AddWidened(dsq, _mm256_add_ps(q0, q1));
  }
  b->sum = HSum(dsum);
  b->asum = HSum(dasum);
  b->sq = HSum(dsq);
  ext.Store(b);
  const double amax_all = std::max(std::fabs(b->min), std::fabs(b->max));
  return std::isfinite(b->asum) && std::isfinite(b->sq) && amax_all >= kTinyBlock;
}

// Every sum in double: 8 floats per iteration converted to double (two 4-lane halves). NaN and
// inf are counted only when the |x| sum is not finite (a finite sum has neither).
template <bool kZeros, bool kAbsExt>
__attribute__((target("avx2,fma"))) void BlockF32Double(const float* p, size_t m8, Block* b) {
  const __m256d dabs = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  const __m256 fabs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256d sum0 = _mm256_setzero_pd(), sum1 = sum0, as0 = sum0, as1 = sum0, sq0 = sum0, sq1 = sum0;
  VecExtremes<kZeros, kAbsExt> ext;
  for (size_t i = 0; i < m8; i += 8) {
    const __m256 x = _mm256_loadu_ps(p + i);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
    sum0 = _mm256_add_pd(sum0, lo);
    sum1 = _mm256_add_pd(sum1, hi);
    as0 = _mm256_add_pd(as0, _mm256_and_pd(lo, dabs));
    as1 = _mm256_add_pd(as1, _mm256_and_pd(hi, dabs));
    sq0 = _mm256_fmadd_pd(lo, lo, sq0);
    sq1 = _mm256_fmadd_pd(hi, hi, sq1);
    ext.Add(x, _mm256_and_ps(x, fabs));
  }
  b->sum = HSum(_mm256_add_pd(sum0, sum1));
  b->asum = HSum(_mm256_add_pd(as0, as1));
  b->sq = HSum(_mm256_add_pd(sq0, sq1));
  ext.Store(b);
  if (!std::isfinite(b->asum)) {  // a NaN or an inf: count them
    for (size_t j = 0; j < m8; ++j) {
      b->nan += std::isnan(p[j]);
      b->inf += std::isinf(p[j]);
    }
  }
}

// Products are never computed here (ComputeStats takes the portable loop when they are needed).
template <bool kZeros, bool kAbsExt>
__attribute__((target("avx2,fma"))) void AccumulateF32Avx2(const float* data, size_t n,
                                                           bool deviations, TensorStats* s) {
  const __m256d dabs = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t m = std::min(kBlock, n - start);
    const size_t m8 = m & ~size_t{7};
    const float* p = data + start;
    Block b;
    // std and variance keep every sum in double: their block mean must be exact (the std of a
    // constant tensor is 0, not float32 rounding).
    if (m8 > 0 && (deviations || !BlockF32Float<kZeros, kAbsExt>(p, m8, &b))) {
      b = Block();
      BlockF32Double<kZeros, kAbsExt>(p, m8, &b);
    }
    AddScalar(p, m8, m, &b);  // the tail: every statistic
    if (deviations) {
      const double bmean = b.sum / static_cast<double>(m);
      const double bamean = b.asum / static_cast<double>(m);
      const __m256d vm = _mm256_set1_pd(bmean), vam = _mm256_set1_pd(bamean);
      __m256d m20 = _mm256_setzero_pd(), m21 = m20, am0 = m20, am1 = m20;
      size_t j = 0;
      for (; j + 8 <= m; j += 8) {
        const __m256 x = _mm256_loadu_ps(p + j);
        const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
        const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
        const __m256d d0 = _mm256_sub_pd(lo, vm), d1 = _mm256_sub_pd(hi, vm);
        m20 = _mm256_fmadd_pd(d0, d0, m20);
        m21 = _mm256_fmadd_pd(d1, d1, m21);
        const __m256d a0 = _mm256_sub_pd(_mm256_and_pd(lo, dabs), vam);
        const __m256d a1 = _mm256_sub_pd(_mm256_and_pd(hi, dabs), vam);
        am0 = _mm256_fmadd_pd(a0, a0, am0);
        am1 = _mm256_fmadd_pd(a1, a1, am1);
      }
      b.m2 = HSum(_mm256_add_pd(m20, m21));
      b.am2 = HSum(_mm256_add_pd(am0, am1));
      for (; j < m; ++j) {
        const double x = p[j];
        const double d = x - bmean, ad = std::fabs(x) - bamean;
        b.m2 += d * d;
        b.am2 += ad * ad;
      }
    }
    b.prod = b.aprod = kNaN;  // not computed here
    Merge(b, m, s);
  }
}
#endif

template <typename Fn>
bool Dispatch(DType t, const void* data, Fn&& fn) {
  switch (t) {
    case DType::kF16:
      fn(static_cast<const F16*>(data));
      return true;
    case DType::kBF16:
      fn(static_cast<const BF16*>(data));
      return true;
    case DType::kF32:
      fn(static_cast<const float*>(data));
      return true;
    case DType::kF64:
      fn(static_cast<const double*>(data));
      return true;
    case DType::kI8:
      fn(static_cast<const int8_t*>(data));
      return true;
    case DType::kI16:
      fn(static_cast<const int16_t*>(data));
      return true;
    case DType::kI32:
      fn(static_cast<const int32_t*>(data));
      return true;
    case DType::kI64:
      fn(static_cast<const int64_t*>(data));
      return true;
    case DType::kU8:
      fn(static_cast<const uint8_t*>(data));
      return true;
    case DType::kU16:
      fn(static_cast<const uint16_t*>(data));
      return true;
    case DType::kU32:
      fn(static_cast<const uint32_t*>(data));
      return true;
    case DType::kU64:
      fn(static_cast<const uint64_t*>(data));
      return true;
    case DType::kBool:
      fn(static_cast<const bool*>(data));
      return true;
    case DType::kComplex64:
      fn(static_cast<const std::complex<float>*>(data));
      return true;
    case DType::kComplex128:
      fn(static_cast<const std::complex<double>*>(data));
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string_view ReductionOpName(ReductionOp op) {
  for (const auto& o : kOpNames) {
    if (o.op == op) return o.name;
  }
  return "?";
}

std::optional<ReductionOp> ReductionOpFromName(std::string_view name) {
  if (name == "l1_norm") return ReductionOp::kL1;
  if (name == "l2_norm") return ReductionOp::kL2;
  for (const auto& o : kOpNames) {
    if (o.name == name) return o.op;
  }
  return std::nullopt;
}

Result<Reduction> ParseReduction(std::string_view token) {
  Reduction r{ReductionOp::kMin, false};
  std::string_view name = token;
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  if (name.substr(0, 4) == "abs_") {
    r.abs = true;
    name.remove_prefix(4);
  }
  auto op = ReductionOpFromName(name);
  if (!op) {
    std::string valid;
    for (const auto& o : kOpNames) valid.append(valid.empty() ? "" : ", ").append(o.name);
    return Status::InvalidArgument("unknown reduction '" + std::string(token) + "': use one of " +
                                   valid + " (or l1_norm, l2_norm), optionally prefixed with abs_");
  }
  r.op = *op;
  return r;
}

std::string ReductionTensorName(std::string_view tensor, Reduction r) {
  std::string out = "smdebug/reductions/";
  if (r.abs) out += "abs_";
  out.append(ReductionOpName(r.op)).append("/").append(tensor);
  return out;
}

std::optional<ParsedReductionName> ParseReductionTensorName(std::string_view name) {
  constexpr std::string_view kPrefix = "smdebug/reductions/";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  auto slash = name.find('/');
  if (slash == std::string_view::npos || slash + 1 >= name.size()) return std::nullopt;
  auto r = ParseReduction(name.substr(0, slash));
  if (!r.ok()) return std::nullopt;
  return ParsedReductionName{std::string(name.substr(slash + 1)), *r};
}

double TensorStats::Value(Reduction r) const {
  const bool empty = count == 0;
  const double n = static_cast<double>(count);
  const bool has_nan = nan_count > 0;
  switch (r.op) {
    case ReductionOp::kMin:
      return empty || has_nan ? kNaN : (r.abs ? abs_min : min);
    case ReductionOp::kMax:
      return empty || has_nan ? kNaN : (r.abs ? abs_max : max);
    case ReductionOp::kMean:
      return empty ? kNaN : (r.abs ? abs_mean : mean);
    case ReductionOp::kVariance:
      return empty ? kNaN : (r.abs ? abs_m2 : m2) / n;
    case ReductionOp::kStd:
      return empty ? kNaN : std::sqrt((r.abs ? abs_m2 : m2) / n);
    case ReductionOp::kSum:
      return r.abs ? abs_sum : sum;
    case ReductionOp::kProd:
      return r.abs ? abs_prod : prod;
    case ReductionOp::kL1:
      return abs_sum;
    case ReductionOp::kL2:
      return std::sqrt(sum_sq);
    case ReductionOp::kNanCount:
      return static_cast<double>(nan_count);
    case ReductionOp::kInfCount:
      return static_cast<double>(inf_count);
    case ReductionOp::kZeroFraction:
      return empty ? 0.0 : static_cast<double>(zero_count) / n;
  }
  return kNaN;
}

namespace {

constexpr std::string_view kStatsFieldNames[kNumStatsFields] = {
    "count",   "nan_count", "inf_count", "zero_count", "min",     "max",
    "abs_min", "abs_max",   "sum",       "abs_sum",    "sum_sq",  "mean",
    "m2",      "abs_mean",  "abs_m2",    "prod",       "abs_prod"};

}  // namespace

std::string_view StatsFieldName(StatsField f) {
  const auto i = static_cast<size_t>(f);
  return i < kNumStatsFields ? kStatsFieldNames[i] : "?";
}

std::vector<StatsField> StatsFieldSet::ToVector() const {
  std::vector<StatsField> out;
  for (size_t i = 0; i < kNumStatsFields; ++i) {
    const auto f = static_cast<StatsField>(i);
    if (Has(f)) out.push_back(f);
  }
  return out;
}

double TensorStats::Get(StatsField f) const {
  switch (f) {
    case StatsField::kCount:
      return static_cast<double>(count);
    case StatsField::kNanCount:
      return static_cast<double>(nan_count);
    case StatsField::kInfCount:
      return static_cast<double>(inf_count);
    case StatsField::kZeroCount:
      return static_cast<double>(zero_count);
    case StatsField::kMin:
      return min;
    case StatsField::kMax:
      return max;
    case StatsField::kAbsMin:
      return abs_min;
    case StatsField::kAbsMax:
      return abs_max;
    case StatsField::kSum:
      return sum;
    case StatsField::kAbsSum:
      return abs_sum;
    case StatsField::kSumSq:
      return sum_sq;
    case StatsField::kMean:
      return mean;
    case StatsField::kM2:
      return m2;
    case StatsField::kAbsMean:
      return abs_mean;
    case StatsField::kAbsM2:
      return abs_m2;
    case StatsField::kProd:
      return prod;
    case StatsField::kAbsProd:
      return abs_prod;
  }
  return kNaN;
}

void TensorStats::Set(StatsField f, double v) {
  switch (f) {
    case StatsField::kCount:
      count = static_cast<int64_t>(v);
      return;
    case StatsField::kNanCount:
      nan_count = static_cast<int64_t>(v);
      return;
    case StatsField::kInfCount:
      inf_count = static_cast<int64_t>(v);
      return;
    case StatsField::kZeroCount:
      zero_count = static_cast<int64_t>(v);
      return;
    case StatsField::kMin:
      min = v;
      return;
    case StatsField::kMax:
      max = v;
      return;
    case StatsField::kAbsMin:
      abs_min = v;
      return;
    case StatsField::kAbsMax:
      abs_max = v;
      return;
    case StatsField::kSum:
      sum = v;
      return;
    case StatsField::kAbsSum:
      abs_sum = v;
      return;
    case StatsField::kSumSq:
      sum_sq = v;
      return;
    case StatsField::kMean:
      mean = v;
      return;
    case StatsField::kM2:
      m2 = v;
      return;
    case StatsField::kAbsMean:
      abs_mean = v;
      return;
    case StatsField::kAbsM2:
      abs_m2 = v;
      return;
    case StatsField::kProd:
      prod = v;
      return;
    case StatsField::kAbsProd:
      abs_prod = v;
      return;
  }
}

StatsFieldSet FieldsRead(Reduction r) {
  using F = StatsField;
  const bool a = r.abs;
  switch (r.op) {
    case ReductionOp::kMin:
      return {a ? F::kAbsMin : F::kMin, F::kNanCount};
    case ReductionOp::kMax:
      return {a ? F::kAbsMax : F::kMax, F::kNanCount};
    case ReductionOp::kMean:
      return {a ? F::kAbsMean : F::kMean};
    case ReductionOp::kStd:
    case ReductionOp::kVariance:
      return {a ? F::kAbsM2 : F::kM2};
    case ReductionOp::kSum:
      return {a ? F::kAbsSum : F::kSum};
    case ReductionOp::kProd:
      return {a ? F::kAbsProd : F::kProd};
    case ReductionOp::kL1:
      return {F::kAbsSum};
    case ReductionOp::kL2:
      return {F::kSumSq};
    case ReductionOp::kNanCount:
      return {F::kNanCount};
    case ReductionOp::kInfCount:
      return {F::kInfCount};
    case ReductionOp::kZeroFraction:
      return {F::kZeroCount};
  }
  return {};
}

StatsFieldSet FieldsRead(const std::vector<Reduction>& reductions) {
  StatsFieldSet s;
  for (const Reduction& r : reductions) s |= FieldsRead(r);
  return s;
}

StatsNeeds StatsNeeds::For(const std::vector<Reduction>& reductions) {
  using F = StatsField;
  const StatsFieldSet f = FieldsRead(reductions);
  StatsNeeds n;
  n.m2 = f.Has(F::kM2);
  n.abs_m2 = f.Has(F::kAbsM2);
  n.prod = f.Has(F::kProd) || f.Has(F::kAbsProd);
  n.zeros = f.Has(F::kZeroCount);
  n.abs_extremes = f.Has(F::kAbsMin) || f.Has(F::kAbsMax);
  return n;
}

namespace {

Result<TensorStats> Compute(const TensorView& v, StatsNeeds needs, bool portable) {
  if (v.dtype == DType::kString || v.dtype == DType::kInvalid) {
    return Status::InvalidArgument("cannot reduce a tensor of dtype " +
                                   std::string(DTypeName(v.dtype)));
  }
  TensorStats s;
  s.min = s.abs_min = kInf;
  s.max = s.abs_max = -kInf;
  const size_t n = static_cast<size_t>(v.num_elements());
  if (n > 0) {
    Tensor copy;
    const void* data = v.data;
    if (!v.is_contiguous()) {
      copy = Tensor::CopyOf(v);
      data = copy.data;
    }
#if defined(__x86_64__)
    if (!portable && v.dtype == DType::kF32 && !needs.prod && HasAvx2Fma()) {
      const auto* f = static_cast<const float*>(data);
      const bool dev = needs.m2 || needs.abs_m2;
      auto kernel = [&](const float* p, size_t m, TensorStats* out) {
        if (needs.zeros && needs.abs_extremes) {
          AccumulateF32Avx2<true, true>(p, m, dev, out);
        } else if (needs.zeros) {
          AccumulateF32Avx2<true, false>(p, m, dev, out);
        } else if (needs.abs_extremes) {
          AccumulateF32Avx2<false, true>(p, m, dev, out);
        } else {
          AccumulateF32Avx2<false, false>(p, m, dev, out);
        }
      };
      if (n <= kChunk) {
        kernel(f, n, &s);
      } else {
        // Chunks of kChunk elements, on the helper threads too; merged in order, so the result
        // is the same whichever thread reduced which chunk.
        const size_t chunks = (n + kChunk - 1) / kChunk;
        std::vector<TensorStats> part(chunks, s);
        internal::HelperPool::Shared().Run(chunks, [&](size_t i) {
          const size_t begin = i * kChunk;
          kernel(f + begin, std::min(kChunk, n - begin), &part[i]);
        });
        for (const TensorStats& c : part) MergeStats(c, &s);
      }
      s.prod = s.abs_prod = 1;  // not asked for
      return s;
    }
#endif
    Dispatch(v.dtype, data, [&](const auto* p) { Accumulate(p, n, &s); });
  }
  return s;
}

}  // namespace

Result<TensorStats> ComputeStats(const TensorView& v, StatsNeeds needs) {
  return Compute(v, needs, false);
}

Result<TensorStats> ComputeStatsPortable(const TensorView& v) {
  return Compute(v, StatsNeeds::All(), true);
}

Result<double> ComputeReduction(const TensorView& v, Reduction r) {
  TS_ASSIGN_OR_RETURN(TensorStats s, ComputeStats(v));
  return s.Value(r);
}

Result<Histogram> ComputeHistogram(const TensorView& v, int bins) {
  if (bins < 1) return Status::InvalidArgument("histogram needs at least 1 bin");
  if (v.dtype == DType::kString || v.dtype == DType::kInvalid) {
    return Status::InvalidArgument("cannot make a histogram of dtype " +
                                   std::string(DTypeName(v.dtype)));
  }
  Tensor copy;
  const void* data = v.data;
  if (!v.is_contiguous()) {
    copy = Tensor::CopyOf(v);
    data = copy.data;
  }
  const size_t n = static_cast<size_t>(v.num_elements());
  Histogram h;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  Dispatch(v.dtype, data, [&](const auto* p) {
    for (size_t i = 0; i < n; ++i) {
      double x = Load(p, i);
      if (!std::isfinite(x)) continue;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      h.num += 1;
      h.sum += x;
      h.sum_squares += x * x;
    }
  });
  if (h.num == 0) {
    h.edges = {0.0, 0.0};
    h.counts = {0.0};
    return h;
  }
  h.min = lo;
  h.max = hi;
  if (lo == hi) bins = 1;
  h.edges.resize(static_cast<size_t>(bins) + 1);
  const double width = (hi - lo) / bins;
  for (int i = 0; i <= bins; ++i) h.edges[static_cast<size_t>(i)] = lo + width * i;
  h.edges.back() = hi;
  h.counts.assign(static_cast<size_t>(bins), 0.0);
  Dispatch(v.dtype, data, [&](const auto* p) {
    for (size_t i = 0; i < n; ++i) {
      double x = Load(p, i);
      if (!std::isfinite(x)) continue;
      int b = width > 0 ? static_cast<int>((x - lo) / width) : 0;
      b = std::clamp(b, 0, bins - 1);
      h.counts[static_cast<size_t>(b)] += 1;
    }
  });
  return h;
}

}  // namespace trainscope
