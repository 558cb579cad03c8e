// The order of a step's loss tensors into series (src/rules/loss_series.h): a loss's closure
// evaluations (LBFGS) are one series in evaluation order; everything else as without a record.
#include "rules/loss_series.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainscope::rules_internal {
namespace {

std::vector<std::string> Field(const std::vector<LossPoint>& points,
                               std::string LossPoint::*field) {
  std::vector<std::string> out;
  for (const auto& p : points) out.push_back(p.*field);
  return out;
}

std::vector<int64_t> Evaluations(const std::vector<LossPoint>& points) {
  std::vector<int64_t> out;
  for (const auto& p : points) out.push_back(p.evaluation);
  return out;
}

TEST(IndexedBase, StripsTheIndex) {
  EXPECT_EQ(IndexedBase("MSELoss_output_12"), "MSELoss_output");
  EXPECT_EQ(IndexedBase("loss_output_0"), "loss_output");
  EXPECT_EQ(IndexedBase("scalar/loss"), "scalar/loss");
  EXPECT_EQ(IndexedBase("loss2"), "loss2");  // no "_" before the digits
  EXPECT_EQ(IndexedBase("_7"), "_7");
}

TEST(OrderLossTensors, WithoutRecordEachTensorIsItsOwnSeries) {
  const std::vector<std::string> names = {"BCELoss_output_0", "BCELoss_output_1"};
  const auto points = OrderLossTensors(names, {});
  EXPECT_EQ(Field(points, &LossPoint::tensor), names);
  EXPECT_EQ(Field(points, &LossPoint::series), names);
  EXPECT_EQ(Evaluations(points), (std::vector<int64_t>{-1, -1}));
}

TEST(OrderLossTensors, EvaluationsOfOneLossAreOneSeriesInCallOrder) {
  // Sorted names put _10 before _2; the record's order wins. _3 (an evaluation pass after the
  // optimizer step, in the same step) is not in the record: a series of its own.
  const std::vector<std::string> names = {"MSELoss_output_0", "MSELoss_output_1",
                                          "MSELoss_output_10", "MSELoss_output_2",
                                          "MSELoss_output_3"};
  ClosureStep lbfgs{"LBFGS", {{"MSELoss_output_0"}, {"MSELoss_output_1"}, {"MSELoss_output_2"}}};
  const auto points = OrderLossTensors(names, {lbfgs});
  EXPECT_EQ(Field(points, &LossPoint::tensor),
            (std::vector<std::string>{"MSELoss_output_0", "MSELoss_output_1", "MSELoss_output_2",
                                      "MSELoss_output_10", "MSELoss_output_3"}));
  EXPECT_EQ(Field(points, &LossPoint::series),
            (std::vector<std::string>{"MSELoss_output_0", "MSELoss_output_0", "MSELoss_output_0",
                                      "MSELoss_output_10", "MSELoss_output_3"}));
  EXPECT_EQ(Evaluations(points), (std::vector<int64_t>{0, 1, 2, -1, -1}));
  EXPECT_EQ(points[1].optimizer, "LBFGS");
  EXPECT_EQ(points[3].optimizer, "");
}

TEST(OrderLossTensors, TwoCallsOfOneCriterionPerEvaluationAreTwoSeries) {
  // A closure computing a real and a fake loss with one criterion: by rank in the evaluation.
  const std::vector<std::string> names = {"BCELoss_output_0", "BCELoss_output_1",
                                          "BCELoss_output_2", "BCELoss_output_3"};
  ClosureStep step{
      "LBFGS",
      {{"BCELoss_output_0", "BCELoss_output_1"}, {"BCELoss_output_2", "BCELoss_output_3"}}};
  const auto points = OrderLossTensors(names, {step});
  EXPECT_EQ(Field(points, &LossPoint::series),
            (std::vector<std::string>{"BCELoss_output_0", "BCELoss_output_1", "BCELoss_output_0",
                                      "BCELoss_output_1"}));
  EXPECT_EQ(Evaluations(points), (std::vector<int64_t>{0, 0, 1, 1}));
}

TEST(OrderLossTensors, TwoLossesOfOneEvaluationRankedPerLoss) {
  // Two loss modules in one closure (a reconstruction and a KL term): one series each.
  const std::vector<std::string> names = {"KLDiv_output_0", "KLDiv_output_1", "MSELoss_output_0",
                                          "MSELoss_output_1"};
  ClosureStep step{
      "LBFGS", {{"MSELoss_output_0", "KLDiv_output_0"}, {"MSELoss_output_1", "KLDiv_output_1"}}};
  const auto points = OrderLossTensors(names, {step});
  EXPECT_EQ(Field(points, &LossPoint::series),
            (std::vector<std::string>{"MSELoss_output_0", "KLDiv_output_0", "MSELoss_output_0",
                                      "KLDiv_output_0"}));
}

TEST(OrderLossTensors, SecondOptimizerStepIsItsOwnSeries) {
  // Two optimizers stepping with closures in one step, sharing a criterion (numbering goes on).
  const std::vector<std::string> names = {"MSELoss_output_0", "MSELoss_output_1",
                                          "MSELoss_output_2", "MSELoss_output_3"};
  ClosureStep a{"LBFGS", {{"MSELoss_output_0"}, {"MSELoss_output_1"}}};
  ClosureStep b{"LBFGS", {{"MSELoss_output_2"}, {"MSELoss_output_3"}}};
  const auto points = OrderLossTensors(names, {a, b});
  EXPECT_EQ(Field(points, &LossPoint::series),
            (std::vector<std::string>{"MSELoss_output_0", "MSELoss_output_0", "MSELoss_output_2",
                                      "MSELoss_output_2"}));
}

TEST(OrderLossTensors, UnselectedAndRepeatedNamesAreLeftOut) {
  // The rule's selection lacks "accuracy_output_0"; a name listed twice counts once, first.
  const std::vector<std::string> names = {"MSELoss_output_0", "MSELoss_output_1"};
  ClosureStep step{
      "LBFGS",
      {{"MSELoss_output_0", "accuracy_output_0"}, {"MSELoss_output_1", "MSELoss_output_0"}}};
  const auto points = OrderLossTensors(names, {step});
  EXPECT_EQ(Field(points, &LossPoint::tensor),
            (std::vector<std::string>{"MSELoss_output_0", "MSELoss_output_1"}));
  EXPECT_EQ(Field(points, &LossPoint::series),
            (std::vector<std::string>{"MSELoss_output_0", "MSELoss_output_0"}));
  EXPECT_EQ(Evaluations(points), (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace trainscope::rules_internal
