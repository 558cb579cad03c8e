// Round trips through TrialWriter and Trial: every dtype and shape reads back bit for bit,
// on a real folder and in memory.
#include <gtest/gtest.h>

#include <complex>
#include <cstring>
#include <numeric>

#include "trainscope/trial.h"
#include "trainscope/writer.h"
#include "trial_test_util.h"

namespace trainscope {
namespace {

using testing::TempDir;

struct Case {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;  // C-contiguous payload
  std::vector<std::string> strings;
};

// Bytes that make every element distinct (and exercise sign bits).
std::string PatternBytes(DType t, int64_t n) {
  std::string b(static_cast<size_t>(n) * DTypeSize(t), '\0');
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>((i * 37 + 11) & 0xff);
  if (t == DType::kBool) {
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i % 3 == 0);
  }
  return b;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  const DType numeric[] = {DType::kF16,  DType::kBF16,      DType::kF32,       DType::kF64,
                           DType::kI8,   DType::kI16,       DType::kI32,       DType::kI64,
                           DType::kU8,   DType::kU16,       DType::kU32,       DType::kU64,
                           DType::kBool, DType::kComplex64, DType::kComplex128};
  for (DType t : numeric) {
    const std::string n(DTypeName(t));
    cases.push_back({n + "/matrix", t, {3, 5}, PatternBytes(t, 15), {}});
    cases.push_back({n + "/scalar", t, {}, PatternBytes(t, 1), {}});
    cases.push_back({n + "/empty", t, {2, 0, 3}, "", {}});
  }
  cases.push_back(
      {"float32/large", DType::kF32, {1 << 18, 4}, PatternBytes(DType::kF32, 1 << 20), {}});
  cases.push_back({"string/vector", DType::kString, {4}, "", {"a", "", "h\xc3\xa9llo", "x y z"}});
  cases.push_back({"string/empty", DType::kString, {0}, "", {}});
  return cases;
}

void WriteCases(Env* env, const std::string& dir, const std::vector<Case>& cases) {
  auto w = testing::OpenWriter(env, dir);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->BeginStep(0, Mode::kTrain, 0).ok());
  for (const Case& c : cases) {
    TensorView v{c.dtype, c.bytes.data(), c.shape, {}, {}};
    for (const std::string& s : c.strings) v.strings.emplace_back(s);
    Status s = w->AddTensor(c.name, v);
    ASSERT_TRUE(s.ok()) << c.name << ": " << s.ToString();
  }
  ASSERT_TRUE(w->EndStep().ok());
  ASSERT_TRUE(w->WriteCollections(testing::CollectionsJson(1)).ok());
  ASSERT_TRUE(w->Close().ok());
}

void CheckCases(Env* env, const std::string& dir, const std::vector<Case>& cases) {
  auto trial = Trial::Open(dir, testing::FastOptions(env));
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  Trial& t = **trial;
  auto names = t.TensorNames();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), cases.size());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto v = t.Value(c.name, 0);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->dtype, c.dtype);
    EXPECT_EQ(v->shape, c.shape);
    if (c.dtype == DType::kString) {
      EXPECT_EQ(v->strings, c.strings);
      continue;
    }
    ASSERT_EQ(v->nbytes(), c.bytes.size());
    if (!c.bytes.empty()) {
      EXPECT_EQ(std::memcmp(v->data, c.bytes.data(), c.bytes.size()), 0);
      // Aligned for the element type, and kept alive by the tensor itself.
      EXPECT_EQ(reinterpret_cast<uintptr_t>(v->data) %
                    std::min<size_t>(8, DTypeSize(c.dtype) / (IsComplex(c.dtype) ? 2 : 1)),
                0u);
      EXPECT_NE(v->keepalive, nullptr);
    }
    auto shape = t.Shape(c.name, 0);
    ASSERT_TRUE(shape.ok());
    EXPECT_EQ(*shape, c.shape);
  }
  // int8 reads as int8 (smdebug reads it as uint8): the sign survives a reduction.
  auto mn = t.ReductionValue("int8/matrix", 0, Reduction{ReductionOp::kMin, false});
  ASSERT_TRUE(mn.ok());
  EXPECT_LT(*mn, 0.0);
}

class RoundTripTest : public ::testing::TestWithParam<bool> {};

TEST_P(RoundTripTest, EveryDTypeAndShape) {
  const bool in_memory = GetParam();
  std::unique_ptr<Env> mem = in_memory ? NewMemEnv() : nullptr;
  TempDir tmp;
  Env* env = in_memory ? mem.get() : Env::Default();
  const std::string dir = in_memory ? "/mem/trial" : tmp.path() + "/trial";
  const auto cases = AllCases();
  WriteCases(env, dir, cases);
  CheckCases(env, dir, cases);
}

TEST_P(RoundTripTest, ValuesAreReadInPlaceFromOneMapping) {
  const bool in_memory = GetParam();
  std::unique_ptr<Env> mem = in_memory ? NewMemEnv() : nullptr;
  TempDir tmp;
  Env* env = in_memory ? mem.get() : Env::Default();
  const std::string dir = in_memory ? "/mem/trial" : tmp.path() + "/trial";
  std::vector<float> big = testing::Pattern(0, 1 << 18, 1.0f);
  {
    auto w = testing::OpenWriter(env, dir);
    ASSERT_TRUE(w->BeginStep(0, Mode::kGlobal, 0).ok());
    ASSERT_TRUE(w->AddTensor("a", testing::FloatView(big)).ok());
    ASSERT_TRUE(w->AddTensor("b", testing::FloatView(big)).ok());
    ASSERT_TRUE(w->EndStep().ok());
    ASSERT_TRUE(w->WriteCollections(testing::CollectionsJson(1)).ok());
    ASSERT_TRUE(w->Close().ok());
  }
  auto trial = Trial::Open(dir, testing::FastOptions(env));
  ASSERT_TRUE(trial.ok());
  auto a1 = (*trial)->Value("a", 0);
  auto a2 = (*trial)->Value("a", 0);
  auto b = (*trial)->Value("b", 0);
  ASSERT_TRUE(a1.ok() && a2.ok() && b.ok());
  // The same bytes, not a copy per read; both tensors share the mapping of their event file.
  EXPECT_EQ(a1->data, a2->data);
  EXPECT_EQ(a1->keepalive, b->keepalive);
  EXPECT_EQ(testing::Floats(*b), big);
  // The tensor outlives the trial (its keepalive holds the mapping).
  trial->reset();
  EXPECT_EQ(testing::Floats(*a1), big);
}

INSTANTIATE_TEST_SUITE_P(Envs, RoundTripTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "MemEnv" : "Posix"; });

}  // namespace
}  // namespace trainscope
