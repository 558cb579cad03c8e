#include "trainscope/reductions.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

namespace trainscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct OpName {
  ReductionOp op;
  std::string_view name;
};
constexpr OpName kOpNames[] = {
    {ReductionOp::kMin, "min"},           {ReductionOp::kMax, "max"},
    {ReductionOp::kMean, "mean"},         {ReductionOp::kStd, "std"},
    {ReductionOp::kVariance, "variance"}, {ReductionOp::kSum, "sum"},
    {ReductionOp::kProd, "prod"},         {ReductionOp::kL1, "l1"},
    {ReductionOp::kL2, "l2"},             {ReductionOp::kNanCount, "nan_count"},
    {ReductionOp::kInfCount, "inf_count"}, {ReductionOp::kZeroFraction, "zero_fraction"},
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

// Accumulates one block of up to kBlock elements in two cache-resident passes, then merges it
// into the running statistics with Chan et al.'s parallel variance formula.
constexpr size_t kBlock = 2048;

template <typename T>
void Accumulate(const T* data, size_t n, TensorStats* s) {
  double block[kBlock];
  double min = s->min, max = s->max, amin = s->abs_min, amax = s->abs_max;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t m = std::min(kBlock, n - start);
    double sum = 0, asum = 0, sq = 0, prod = 1, aprod = 1;
    int64_t nan = 0, inf = 0, zero = 0;
    for (size_t i = 0; i < m; ++i) {
      const double x = Load<T>(data, start + i);
      block[i] = x;
      const double a = std::fabs(x);
      sum += x;
      asum += a;
      sq += x * x;
      prod *= x;
      aprod *= a;
      min = x < min ? x : min;
      max = x > max ? x : max;
      amin = a < amin ? a : amin;
      amax = a > amax ? a : amax;
      nan += std::isnan(x);
      inf += std::isinf(x);
      zero += (x == 0.0);
    }
    const double bmean = sum / static_cast<double>(m);
    const double bamean = asum / static_cast<double>(m);
    double m2 = 0, am2 = 0;
    for (size_t i = 0; i < m; ++i) {
      const double d = block[i] - bmean;
      const double ad = std::fabs(block[i]) - bamean;
      m2 += d * d;
      am2 += ad * ad;
    }
    const double na = static_cast<double>(s->count), nb = static_cast<double>(m);
    const double nt = na + nb;
    if (s->count == 0) {
      s->mean = bmean;
      s->m2 = m2;
      s->abs_mean = bamean;
      s->abs_m2 = am2;
    } else {
      const double d = bmean - s->mean, ad = bamean - s->abs_mean;
      s->mean += d * nb / nt;
      s->m2 += m2 + d * d * na * nb / nt;
      s->abs_mean += ad * nb / nt;
      s->abs_m2 += am2 + ad * ad * na * nb / nt;
    }
    s->count += static_cast<int64_t>(m);
    s->sum += sum;
    s->abs_sum += asum;
    s->sum_sq += sq;
    s->prod *= prod;
    s->abs_prod *= aprod;
    s->nan_count += nan;
    s->inf_count += inf;
    s->zero_count += zero;
  }
  s->min = min;
  s->max = max;
  s->abs_min = amin;
  s->abs_max = amax;
}

template <typename Fn>
bool Dispatch(DType t, const void* data, Fn&& fn) {
  switch (t) {
    case DType::kF16: fn(static_cast<const F16*>(data)); return true;
    case DType::kBF16: fn(static_cast<const BF16*>(data)); return true;
    case DType::kF32: fn(static_cast<const float*>(data)); return true;
    case DType::kF64: fn(static_cast<const double*>(data)); return true;
    case DType::kI8: fn(static_cast<const int8_t*>(data)); return true;
    case DType::kI16: fn(static_cast<const int16_t*>(data)); return true;
    case DType::kI32: fn(static_cast<const int32_t*>(data)); return true;
    case DType::kI64: fn(static_cast<const int64_t*>(data)); return true;
    case DType::kU8: fn(static_cast<const uint8_t*>(data)); return true;
    case DType::kU16: fn(static_cast<const uint16_t*>(data)); return true;
    case DType::kU32: fn(static_cast<const uint32_t*>(data)); return true;
    case DType::kU64: fn(static_cast<const uint64_t*>(data)); return true;
    case DType::kBool: fn(static_cast<const bool*>(data)); return true;
    case DType::kComplex64: fn(static_cast<const std::complex<float>*>(data)); return true;
    case DType::kComplex128: fn(static_cast<const std::complex<double>*>(data)); return true;
    default: return false;
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
    return Status::InvalidArgument("unknown reduction '" + std::string(token) +
                                   "': use one of " + valid +
                                   " (or l1_norm, l2_norm), optionally prefixed with abs_");
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
    case ReductionOp::kMin: return empty || has_nan ? kNaN : (r.abs ? abs_min : min);
    case ReductionOp::kMax: return empty || has_nan ? kNaN : (r.abs ? abs_max : max);
    case ReductionOp::kMean: return empty ? kNaN : (r.abs ? abs_mean : mean);
    case ReductionOp::kVariance: return empty ? kNaN : (r.abs ? abs_m2 : m2) / n;
    case ReductionOp::kStd: return empty ? kNaN : std::sqrt((r.abs ? abs_m2 : m2) / n);
    case ReductionOp::kSum: return r.abs ? abs_sum : sum;
    case ReductionOp::kProd: return r.abs ? abs_prod : prod;
    case ReductionOp::kL1: return abs_sum;
    case ReductionOp::kL2: return std::sqrt(sum_sq);
    case ReductionOp::kNanCount: return static_cast<double>(nan_count);
    case ReductionOp::kInfCount: return static_cast<double>(inf_count);
    case ReductionOp::kZeroFraction: return empty ? 0.0 : static_cast<double>(zero_count) / n;
  }
  return kNaN;
}

Result<TensorStats> ComputeStats(const TensorView& v) {
  if (v.dtype == DType::kString || v.dtype == DType::kInvalid) {
    return Status::InvalidArgument("cannot reduce a tensor of dtype " +
                                   std::string(DTypeName(v.dtype)));
  }
  TensorStats s;
  s.min = s.abs_min = std::numeric_limits<double>::infinity();
  s.max = s.abs_max = -std::numeric_limits<double>::infinity();
  const size_t n = static_cast<size_t>(v.num_elements());
  if (n > 0) {
    Tensor copy;
    const void* data = v.data;
    if (!v.is_contiguous()) {
      copy = Tensor::CopyOf(v);
      data = copy.data;
    }
    Dispatch(v.dtype, data, [&](const auto* p) { Accumulate(p, n, &s); });
  }
  return s;
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
