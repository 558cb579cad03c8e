// Diagnose: the root cause first, the findings it explains under it (trainscope/diagnosis.h).
#include "trainscope/diagnosis.h"

#include <gtest/gtest.h>

namespace trainscope {
namespace {

RuleFinding F(std::string rule, int64_t step, std::string condition = "") {
  RuleFinding f;
  f.rule = std::move(rule);
  f.step = step;
  f.condition = std::move(condition);
  return f;
}

std::vector<std::string> Rules(const std::vector<RuleFinding>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(f.rule);
  return out;
}

TEST(Diagnose, NoFindingsNoDiagnosis) { EXPECT_TRUE(Diagnose({}).empty()); }

// README's main job: a learning rate far too high. The loss spikes, units die, gradients vanish;
// listed alphabetically the vanishing gradients came first.
TEST(Diagnose, ADivergenceLeadsTheUnitsAndGradientsItKilled) {
  auto d = Diagnose({F("VanishingGradient", 22), F("DeadRelu", 20),
                     F("LossNotDecreasing", 9, "window median / initial level > divergence_factor"),
                     F("WeightUpdateRatio", 30)});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].cause.rule, "LossNotDecreasing");
  EXPECT_EQ(d[0].stage, "divergence");
  EXPECT_EQ(Rules(d[0].evidence),
            (std::vector<std::string>{"DeadRelu", "VanishingGradient", "WeightUpdateRatio"}));
}

// A validation loss that blew up (Overfit's "diverged") is a divergence, upstream of the units it
// killed; Overfit's gap is generalisation, downstream of them.
TEST(Diagnose, AValidationLossThatBlewUpIsADivergence) {
  auto d = Diagnose({F("DeadRelu", 11), F("Overfit", 11,
                                          "validation loss diverged: more than 100-fold in one "
                                          "evaluation pass")});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].cause.rule, "Overfit");
  EXPECT_EQ(d[0].stage, "divergence");
  d = Diagnose({F("DeadRelu", 11), F("Overfit", 11, "validation stalled while training falls")});
  EXPECT_EQ(d[0].cause.rule, "DeadRelu");
}

// A rule that sees its tensors every 10 steps can notice a signal up to 10 steps after another
// rule noticed its consequence: simultaneous findings are ordered upstream first.
TEST(Diagnose, SimultaneousFindingsLeadWithTheMostUpstream) {
  auto d = Diagnose({F("VanishingGradient", 10), F("DeadRelu", 19)});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].cause.rule, "DeadRelu");
  EXPECT_EQ(Rules(d[0].evidence), (std::vector<std::string>{"VanishingGradient"}));
  // 10 steps apart is no longer simultaneous: the earlier signal leads, and the later upstream
  // finding is a problem of its own.
  d = Diagnose({F("VanishingGradient", 10), F("DeadRelu", 20)});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].cause.rule, "VanishingGradient");
  EXPECT_TRUE(d[0].evidence.empty());
  EXPECT_EQ(d[1].cause.rule, "DeadRelu");
}

TEST(Diagnose, LossNotLearningIsDownstreamOfAFrozenModelButADivergenceIsNot) {
  auto d = Diagnose({F("LossNotDecreasing", 39,
                       "no drop below the initial level and no "
                       "downward trend"),
                     F("UnchangedTensor", 40)});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].cause.rule, "UnchangedTensor");
  EXPECT_EQ(d[0].stage, "gradients");
  EXPECT_EQ(d[0].evidence.size(), 1u);
  d = Diagnose({F("LossNotDecreasing", 5,
                  "window mean rose by more than "
                  "increase_threshold_percent, significantly"),
                F("UnchangedTensor", 40)});
  EXPECT_EQ(d[0].cause.rule, "LossNotDecreasing");
  EXPECT_EQ(d[0].stage, "divergence");
}

TEST(Diagnose, BadInputLeadsEverythingDownstream) {
  auto d = Diagnose({F("CheckInputImages", 0), F("PoorWeightInitialization", 0),
                     F("ExplodingTensor", 3), F("Overfit", 200)});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].cause.rule, "CheckInputImages");
  EXPECT_EQ(d[0].stage, "input data");
  EXPECT_EQ(d[0].evidence.size(), 3u);
}

TEST(Diagnose, ProfilerAndCustomFindingsAreDiagnosesOfTheirOwn) {
  auto d =
      Diagnose({F("StepOutlier", -1), F("MyRule", 3), F("ExplodingTensor", 4), F("DeadRelu", 50)});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].cause.rule, "ExplodingTensor");
  EXPECT_EQ(Rules(d[0].evidence), (std::vector<std::string>{"DeadRelu"}));
  EXPECT_EQ(d[1].cause.rule, "MyRule");  // other findings after the chain, by step
  EXPECT_EQ(d[1].stage, "other");
  EXPECT_EQ(d[2].cause.rule, "StepOutlier");
}

TEST(Diagnose, EveryFindingAppearsOnce) {
  std::vector<RuleFinding> in = {F("Overfit", 100),
                                 F("DeadRelu", 20),
                                 F("CheckInputImages", 60),
                                 F("VanishingGradient", 5),
                                 F("ExplodingTensor", 70),
                                 F("LowGPUUtilization", -1),
                                 F("SaturatedActivation", 21),
                                 F("WeightUpdateRatio", 90)};
  size_t n = 0;
  for (const auto& d : Diagnose(in)) n += 1 + d.evidence.size();
  EXPECT_EQ(n, in.size());
}

}  // namespace
}  // namespace trainscope
