// TorchStatsOnDevice (trainscope/torch_stats.h), the on-device statistics both hooks use: the
// tensor it returns (where it lives, its dtype, its length and order) and its values, which are
// TorchTensorStats's and so ComputeStats's (torch_hook_test.cc compares those). CPU tensors: the
// device is only where the tensor lives; a GPU runs the same operations.
#include "trainscope/torch_stats.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "trainscope/reductions.h"

namespace trainscope {
namespace {

std::vector<torch::Tensor> Cases() {
  torch::manual_seed(7);
  torch::Tensor specials = torch::randn({5, 7});
  specials[1][2] = std::numeric_limits<float>::infinity();
  specials[3][4] = 0;
  torch::Tensor with_nan = torch::randn({9});
  with_nan[5] = std::nanf("");
  return {torch::randn({33, 17}),
          torch::randn({6, 4}).t(),
          specials,
          with_nan,
          torch::randint(-5, 5, {40}, torch::kLong),
          torch::randn({12}).gt(0),
          torch::randn({10}, torch::kHalf),
          torch::randn({4, 4}, torch::kComplexFloat)};
}

void ExpectSameValue(double got, double want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what;
  } else {
    EXPECT_EQ(got, want) << what;  // the same operations: bit for bit
  }
}

// One 1-D float64 tensor on the tensor's device, in StatsField order less count, whose values are
// TorchTensorStats's, for every single field and for all of them at once.
TEST(TorchStatsOnDevice, IsOneFloat64VectorInFieldOrderWithTorchTensorStatsValues) {
  const std::vector<torch::Tensor> cases = Cases();
  std::vector<StatsFieldSet> sets = {
      StatsFieldSet::All(),
      {StatsField::kAbsM2, StatsField::kMin, StatsField::kCount},
      FieldsRead(
          {{ReductionOp::kStd, false}, {ReductionOp::kL2, false}, {ReductionOp::kMax, true}})};
  for (size_t i = 0; i < kNumStatsFields; ++i) sets.push_back({static_cast<StatsField>(i)});
  for (size_t c = 0; c < cases.size(); ++c) {
    for (const StatsFieldSet& fields : sets) {
      std::vector<StatsField> order = fields.ToVector();
      std::erase(order, StatsField::kCount);
      SCOPED_TRACE("case " + std::to_string(c) + ", " + std::to_string(order.size()) + " fields");
      auto got = TorchStatsOnDevice(cases[c], fields);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->dim(), 1);
      EXPECT_EQ(got->scalar_type(), torch::kDouble);
      EXPECT_EQ(got->device(), cases[c].device());
      ASSERT_EQ(got->numel(), static_cast<int64_t>(order.size()));
      auto want = TorchTensorStats(cases[c], fields);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      const torch::Tensor host = got->cpu().contiguous();
      for (size_t k = 0; k < order.size(); ++k) {
        ExpectSameValue(host[static_cast<int64_t>(k)].item<double>(), want->Get(order[k]),
                        std::string(StatsFieldName(order[k])));
      }
    }
  }
}

TEST(TorchStatsOnDevice, EmptyTensorsNoFieldsAndUndefinedTensors) {
  // No field to compute (count alone is not read): an empty vector, still on the device.
  auto none = TorchStatsOnDevice(torch::randn({3}), {StatsField::kCount});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->numel(), 0);
  EXPECT_EQ(none->scalar_type(), torch::kDouble);
  // An empty tensor: nothing is read; TorchTensorStats's values for it.
  const StatsFieldSet fields = {StatsField::kMin, StatsField::kAbsMax, StatsField::kSum,
                                StatsField::kProd};
  auto empty = TorchStatsOnDevice(torch::zeros({0, 3}), fields);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  ASSERT_EQ(empty->numel(), 4);
  const torch::Tensor host = empty->cpu();
  EXPECT_EQ(host[0].item<double>(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(host[1].item<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(host[2].item<double>(), 0);
  EXPECT_EQ(host[3].item<double>(), 1);
  auto want = TorchTensorStats(torch::zeros({0, 3}), fields);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(want->min, host[0].item<double>());
  EXPECT_EQ(want->abs_max, host[1].item<double>());

  auto undefined = TorchStatsOnDevice(torch::Tensor(), StatsFieldSet::All());
  EXPECT_EQ(undefined.status().code(), StatusCode::kInvalidArgument);
}

// The statistics do not join autograd: a parameter's are plain values.
TEST(TorchStatsOnDevice, LeavesAutogradAlone) {
  torch::Tensor w = torch::randn({4, 3}, torch::requires_grad());
  auto got = TorchStatsOnDevice(w, {StatsField::kSum, StatsField::kM2});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(got->requires_grad());
  EXPECT_NEAR(got->cpu()[0].item<double>(), w.sum().item<double>(), 1e-5);
}

}  // namespace
}  // namespace trainscope
