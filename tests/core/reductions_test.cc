#include "trainscope/reductions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace trainscope {
namespace {

// Straightforward two-pass reference, in long double.
struct Ref {
  double min, max, mean, var, sum, prod, l1, l2, abs_mean, abs_var;
};
Ref Reference(const std::vector<double>& x) {
  Ref r{};
  long double s = 0, as = 0, sq = 0, p = 1;
  r.min = r.max = x[0];
  for (double v : x) {
    s += v;
    as += std::fabs(v);
    sq += static_cast<long double>(v) * v;
    p *= v;
    r.min = std::min(r.min, v);
    r.max = std::max(r.max, v);
  }
  long double mean = s / x.size(), amean = as / x.size(), m2 = 0, am2 = 0;
  for (double v : x) {
    m2 += (v - mean) * (v - mean);
    am2 += (std::fabs(v) - amean) * (std::fabs(v) - amean);
  }
  r.mean = static_cast<double>(mean);
  r.abs_mean = static_cast<double>(amean);
  r.var = static_cast<double>(m2 / x.size());
  r.abs_var = static_cast<double>(am2 / x.size());
  r.sum = static_cast<double>(s);
  r.prod = static_cast<double>(p);
  r.l1 = static_cast<double>(as);
  r.l2 = std::sqrt(static_cast<double>(sq));
  return r;
}

double V(const TensorView& v, const char* name) {
  auto r = ParseReduction(name);
  EXPECT_TRUE(r.ok()) << name;
  auto x = ComputeReduction(v, *r);
  EXPECT_TRUE(x.ok());
  return *x;
}

TEST(ReductionsTest, MatchesReferenceOnFloat32AcrossBlocks) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(3.0f, 2.0f);
  for (size_t n : {1u, 5u, 2047u, 2048u, 2049u, 100000u}) {
    std::vector<float> x(n);
    for (auto& v : x) v = d(rng);
    std::vector<double> xd(x.begin(), x.end());
    Ref ref = Reference(xd);
    TensorView v{DType::kF32, x.data(), {static_cast<int64_t>(n)}, {}, {}};
    const double tol = 1e-9 * std::max(1.0, std::fabs(ref.sum));
    EXPECT_DOUBLE_EQ(V(v, "min"), ref.min);
    EXPECT_DOUBLE_EQ(V(v, "max"), ref.max);
    EXPECT_NEAR(V(v, "mean"), ref.mean, 1e-12 * std::fabs(ref.mean) + 1e-12);
    EXPECT_NEAR(V(v, "variance"), ref.var, 1e-9 * ref.var + 1e-12);
    EXPECT_NEAR(V(v, "std"), std::sqrt(ref.var), 1e-9);
    EXPECT_NEAR(V(v, "sum"), ref.sum, tol);
    EXPECT_NEAR(V(v, "l1"), ref.l1, tol + 1e-9 * ref.l1);
    EXPECT_NEAR(V(v, "l2_norm"), ref.l2, 1e-9 * ref.l2);
    EXPECT_NEAR(V(v, "abs_mean"), ref.abs_mean, 1e-9);
    EXPECT_NEAR(V(v, "abs_variance"), ref.abs_var, 1e-9 * ref.abs_var + 1e-12);
    EXPECT_DOUBLE_EQ(V(v, "abs_l2"), V(v, "l2"));
  }
}

TEST(ReductionsTest, PopulationStdAndFlattenedNormOnAMatrix) {
  // The example from smdebug's disagreement: a 2-D tensor's l2 is the flattened vector norm.
  float m[2][3] = {{1, 2, 3}, {4, 5, 6}};
  TensorView v{DType::kF32, m, {2, 3}, {}, {}};
  EXPECT_DOUBLE_EQ(V(v, "l2"), std::sqrt(91.0));  // not the spectral norm 9.508
  EXPECT_DOUBLE_EQ(V(v, "l1"), 21.0);             // not the max column sum 9
  EXPECT_DOUBLE_EQ(V(v, "variance"), 17.5 / 6);   // ddof = 0
  EXPECT_DOUBLE_EQ(V(v, "prod"), 720.0);
}

TEST(ReductionsTest, IntegersHalvesBoolsComplex) {
  int8_t i8[] = {-128, 0, 127, -1};
  TensorView vi{DType::kI8, i8, {4}, {}, {}};
  EXPECT_EQ(V(vi, "min"), -128);
  EXPECT_EQ(V(vi, "abs_max"), 128);
  EXPECT_EQ(V(vi, "zero_fraction"), 0.25);
  uint16_t h[] = {FloatToHalf(1.5f), FloatToHalf(-2.0f)};
  TensorView vh{DType::kF16, h, {2}, {}, {}};
  EXPECT_EQ(V(vh, "sum"), -0.5);
  uint16_t b[] = {FloatToBFloat16(3.0f), FloatToBFloat16(5.0f)};
  TensorView vb{DType::kBF16, b, {2}, {}, {}};
  EXPECT_EQ(V(vb, "mean"), 4.0);
  bool bs[] = {true, false, true};
  TensorView vbool{DType::kBool, bs, {3}, {}, {}};
  EXPECT_EQ(V(vbool, "sum"), 2.0);
  float c[] = {3, 4, 0, 1};  // complex64 (3+4i), (0+1i): magnitudes 5 and 1
  TensorView vc{DType::kComplex64, c, {2}, {}, {}};
  EXPECT_EQ(V(vc, "max"), 5.0);
  uint64_t u = 18446744073709551615ull;
  EXPECT_EQ(V(TensorView::Scalar(DType::kU64, &u), "max"), 18446744073709551615.0);
}

TEST(ReductionsTest, NanAndInfAreCountedAndPropagate) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  float x[] = {1, nan, 3, inf, 0, -inf};
  TensorView v{DType::kF32, x, {6}, {}, {}};
  EXPECT_EQ(V(v, "nan_count"), 1);
  EXPECT_EQ(V(v, "inf_count"), 2);
  EXPECT_NEAR(V(v, "zero_fraction"), 1.0 / 6, 1e-15);
  EXPECT_TRUE(std::isnan(V(v, "min")));
  EXPECT_TRUE(std::isnan(V(v, "mean")));
  float y[] = {1, inf};
  TensorView w{DType::kF32, y, {2}, {}, {}};
  EXPECT_EQ(V(w, "max"), inf);
  EXPECT_EQ(V(w, "min"), 1);
}

TEST(ReductionsTest, EmptyAndStridedViews) {
  TensorView e{DType::kF32, nullptr, {0, 3}, {}, {}};
  EXPECT_TRUE(std::isnan(V(e, "mean")));
  EXPECT_EQ(V(e, "sum"), 0.0);
  EXPECT_EQ(V(e, "prod"), 1.0);
  // Column 1 of a 3x4 matrix, as a strided view.
  float m[12];
  std::iota(m, m + 12, 0.0f);
  TensorView col{DType::kF32, m + 1, {3}, {4}, {}};
  EXPECT_FALSE(col.is_contiguous());
  EXPECT_EQ(V(col, "sum"), 1 + 5 + 9);
  // A transposed 3x4 -> 4x3 view.
  TensorView t{DType::kF32, m, {4, 3}, {1, 4}, {}};
  Tensor c = Tensor::CopyOf(t);
  const float* cf = static_cast<const float*>(c.data);
  EXPECT_EQ(cf[0], 0);
  EXPECT_EQ(cf[1], 4);
  EXPECT_EQ(cf[2], 8);
  EXPECT_EQ(cf[3], 1);
  // Negative stride: reversed vector.
  TensorView rev{DType::kF32, m + 11, {12}, {-1}, {}};
  Tensor r = Tensor::CopyOf(rev);
  EXPECT_EQ(static_cast<const float*>(r.data)[0], 11);
  EXPECT_EQ(static_cast<const float*>(r.data)[11], 0);
}

TEST(ReductionsTest, NamesParseAndFormat) {
  auto r = ParseReduction("abs_l2_norm");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->op, ReductionOp::kL2);
  EXPECT_TRUE(r->abs);
  EXPECT_EQ(ReductionTensorName("Net_fc1.weight", {ReductionOp::kMean, true}),
            "smdebug/reductions/abs_mean/Net_fc1.weight");
  auto p = ParseReductionTensorName("smdebug/reductions/l2/gradient/Net_fc1.weight");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->tensor, "gradient/Net_fc1.weight");
  EXPECT_EQ(p->reduction.op, ReductionOp::kL2);
  EXPECT_FALSE(ParseReductionTensorName("Net_fc1.weight").has_value());
  Status bad = ParseReduction("median").status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("'median'"), std::string::npos);
  EXPECT_NE(bad.message().find("variance"), std::string::npos);
}

TEST(HistogramTest, CountsEveryFiniteValueOnce) {
  std::vector<double> x = {0, 1, 2, 3, 4,  5,
                           6, 7, 8, 9, 10, std::numeric_limits<double>::quiet_NaN()};
  TensorView v{DType::kF64, x.data(), {12}, {}, {}};
  auto h = ComputeHistogram(v, 5);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->counts.size(), 5u);
  ASSERT_EQ(h->edges.size(), 6u);
  EXPECT_EQ(std::accumulate(h->counts.begin(), h->counts.end(), 0.0), 11.0);
  EXPECT_EQ(h->counts.back(), 3.0);  // [8, 10] closed
  EXPECT_EQ(h->min, 0);
  EXPECT_EQ(h->max, 10);
  EXPECT_EQ(h->sum, 55);
  double c[] = {2, 2, 2};
  auto one = ComputeHistogram(TensorView{DType::kF64, c, {3}, {}, {}}, 10);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->counts, std::vector<double>{3});
}

// The float32 kernel (AVX2 where the CPU has it) against the portable loop: every statistic, on
// sizes around the vector width and block size, with NaN, inf, zeros and negative zeros mixed in.
TEST(ReductionsTest, Float32KernelAgreesWithThePortableLoop) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(-0.5f, 3.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  auto near = [](double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::fabs(a - b) <= 1e-12 * std::max(1.0, std::max(std::fabs(a), std::fabs(b)));
  };
  // Without std/variance, a block's sums accumulate in float32 runs of 16 values per lane
  // (reductions.h): within 16 float32 epsilons of the sum of |x| (of x^2 for l2).
  constexpr double kFloatSums = 16 * 0x1p-24;
  auto close = [&](const std::string& r, const TensorStats& fast, const TensorStats& ref, double a,
                   double b) {
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) return near(a, b);
    double scale = 0;
    if (r == "sum" || r == "l1") scale = ref.abs_sum;
    if (r == "mean" || r == "abs_mean") scale = ref.abs_mean;
    if (r == "l2") scale = std::sqrt(ref.sum_sq);
    (void)fast;
    return near(a, b) || std::fabs(a - b) <= kFloatSums * scale;
  };
  for (int special : {0, 1, 2, 3}) {  // none, zeros, +-inf, NaN
    for (size_t n : {1u, 7u, 8u, 9u, 15u, 16u, 17u, 2047u, 2048u, 2049u, 4103u, 100000u}) {
      std::vector<float> x(n);
      for (auto& v : x) {
        v = d(rng);
        const int k = pick(rng);
        if (special == 1 && k < 10) v = (k % 2) ? 0.0f : -0.0f;
        if (special == 2 && k < 2) v = (k % 2) ? INFINITY : -INFINITY;
        if (special == 3 && k < 1) v = NAN;
      }
      TensorView view{DType::kF32, x.data(), {static_cast<int64_t>(n)}, {}, {}};
      auto ref = ComputeStatsPortable(view);
      ASSERT_TRUE(ref.ok());
      // Everything but products, then only what each group of reductions needs.
      const std::vector<std::vector<const char*>> groups = {
          {"min", "max", "mean", "std", "variance", "sum", "l1", "l2", "abs_min", "abs_max",
           "abs_mean", "abs_std", "abs_variance", "nan_count", "inf_count", "zero_fraction"},
          {"min", "max", "mean", "l2", "abs_mean"},
          {"zero_fraction", "nan_count", "inf_count"},
          {"abs_min", "abs_max", "abs_std"},
          {"std", "l1"}};
      for (const auto& group : groups) {
        std::vector<Reduction> reds;
        for (const char* r : group) reds.push_back(*ParseReduction(r));
        auto fast = ComputeStats(view, StatsNeeds::For(reds));
        ASSERT_TRUE(fast.ok());
        EXPECT_EQ(fast->count, ref->count);
        EXPECT_EQ(fast->nan_count, ref->nan_count) << n;
        EXPECT_EQ(fast->inf_count, ref->inf_count) << n;
        const bool doubles = std::any_of(reds.begin(), reds.end(), [](Reduction r) {
          return r.op == ReductionOp::kStd || r.op == ReductionOp::kVariance;
        });
        for (size_t k = 0; k < reds.size(); ++k) {
          const double a = fast->Value(reds[k]), b = ref->Value(reds[k]);
          if (doubles) {  // std or variance asked for: every sum in double, as the portable loop
            EXPECT_PRED2(near, a, b) << group[k] << " n=" << n << " special=" << special;
          } else {
            EXPECT_TRUE(close(group[k], *fast, *ref, a, b))
                << group[k] << " n=" << n << " special=" << special << ": " << a << " vs " << b;
          }
        }
      }
      // Asked for products, the result is the portable loop's exactly.
      auto with_prod = ComputeStats(view, StatsNeeds::All());
      ASSERT_TRUE(with_prod.ok());
      EXPECT_PRED2(near, with_prod->prod, ref->prod);
    }
  }
}

// Where float32 partial sums would not be exact enough, the kernel sums in double: every |x| tiny
// (squares near float32's underflow), partials beyond float32's range, and std of a constant.
TEST(ReductionsTest, Float32KernelKeepsPrecisionAtTheEdges) {
  std::vector<Reduction> fast_set;
  for (const char* r : {"min", "max", "mean", "abs_mean", "l2", "sum"}) {
    fast_set.push_back(*ParseReduction(r));
  }
  auto check = [&](const std::vector<float>& x, const char* what) {
    TensorView view{DType::kF32, x.data(), {static_cast<int64_t>(x.size())}, {}, {}};
    auto fast = ComputeStats(view, StatsNeeds::For(fast_set));
    auto ref = ComputeStatsPortable(view);
    ASSERT_TRUE(fast.ok() && ref.ok());
    for (Reduction r : fast_set) {
      const double a = fast->Value(r), b = ref->Value(r);
      EXPECT_TRUE(a == b || std::fabs(a - b) <= 1e-12 * std::fabs(b))
          << what << " " << ReductionOpName(r.op) << ": " << a << " vs " << b;
    }
  };
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> tiny(5000), huge(5000);
  for (auto& v : tiny) v = d(rng) * 1e-25f;  // x^2 ~ 1e-50: zero in float32
  for (auto& v : huge) v = d(rng) * 1e30f;   // x^2 overflows float32
  check(tiny, "tiny");
  check(huge, "huge");
  EXPECT_GT(*ComputeReduction(TensorView{DType::kF32, tiny.data(), {5000}, {}, {}},
                              *ParseReduction("l2")),
            1e-24);
  std::vector<float> constant(10000, 0.1f);
  TensorView cv{DType::kF32, constant.data(), {10000}, {}, {}};
  EXPECT_EQ(*ComputeReduction(cv, *ParseReduction("std")), 0.0);
  EXPECT_EQ(*ComputeReduction(cv, *ParseReduction("variance")), 0.0);
}

TEST(ReductionsTest, NeedsFollowTheReductions) {
  auto needs = [](std::vector<const char*> names) {
    std::vector<Reduction> rs;
    for (const char* n : names) rs.push_back(*ParseReduction(n));
    return StatsNeeds::For(rs);
  };
  StatsNeeds a = needs({"min", "max", "mean", "abs_mean", "l2"});
  EXPECT_FALSE(a.m2 || a.abs_m2 || a.prod);
  StatsNeeds b = needs({"std", "abs_variance", "abs_prod"});
  EXPECT_TRUE(b.m2 && b.abs_m2 && b.prod);
  StatsNeeds c = needs({"abs_std"});
  EXPECT_TRUE(c.abs_m2);
  EXPECT_FALSE(c.m2 || c.prod);
}

// FieldsRead is the one table of what each reduction reads: a TensorStats holding only those
// fields (and count) of a full ComputeStats, every other field poisoned, gives every reduction
// exactly the value ComputeStats gives; the names follow the TensorStats members.
TEST(StatsFields, EachReductionReadsOnlyTheFieldsItDeclares) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.5f, 2.0f);
  std::vector<float> x(257);
  for (float& v : x) v = d(rng);
  x[3] = 0;
  x[9] = 0;
  TensorView v{DType::kF32, x.data(), {static_cast<int64_t>(x.size())}, {}, {}};
  auto full = ComputeStats(v);
  ASSERT_TRUE(full.ok());
  for (ReductionOp op : kAllReductionOps) {
    for (bool abs : {false, true}) {
      const Reduction r{op, abs};
      const StatsFieldSet read = FieldsRead(r);
      TensorStats partial;
      for (size_t i = 0; i < kNumStatsFields; ++i) {
        const auto f = static_cast<StatsField>(i);
        partial.Set(f, f == StatsField::kCount || read.Has(f) ? full->Get(f) : 1e30);
      }
      const double want = full->Value(r), got = partial.Value(r);
      EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want)))
          << ReductionOpName(op) << (abs ? " abs" : "") << ": " << got << " vs " << want;
    }
  }
  EXPECT_EQ(StatsFieldName(StatsField::kCount), "count");
  EXPECT_EQ(StatsFieldName(StatsField::kAbsProd), "abs_prod");
  EXPECT_EQ(StatsFieldSet::All().ToVector().size(), kNumStatsFields);
  EXPECT_TRUE(FieldsRead(Reduction{ReductionOp::kStd, true}).Has(StatsField::kAbsM2));
  EXPECT_FALSE(FieldsRead(Reduction{ReductionOp::kStd, true}).Has(StatsField::kM2));
}

}  // namespace
}  // namespace trainscope
