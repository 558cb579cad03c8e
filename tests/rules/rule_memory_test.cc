// Bounded memory: a 5k-step trial of scalars (in memory) through a runner with the loss and
// tensor rules. The runner's own counters (cache size, rule state bytes, tracked keys) must be
// the same half-way and after 5k steps: nothing keeps one entry per step.
#include <gtest/gtest.h>

#include "rule_case.h"

namespace trainscope::rules_test {
namespace {

TEST(RuleRunnerMemory, StaysFlatOverFiveThousandSteps) {
  auto env = NewMemEnv();
  const std::string path = "/mem/trial";
  WriterOptions wo;
  wo.env = env.get();
  wo.quiet = true;
  auto w = TrialWriter::Open(path, wo);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->WriteCollections(CollectionsJson({})).ok());
  TrialOptions to = FastTrialOptions();
  to.env = env.get();
  auto trial = Trial::Open(path, to);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();

  int64_t clock_us = 1'700'000'000'000'000;
  RunnerOptions ro;
  ro.env = env.get();
  ro.now_micros = [&clock_us] { return clock_us; };
  RuleRunner runner(std::shared_ptr<Trial>(std::move(trial).value()), ro);
  for (const auto& [name, params] : std::vector<std::pair<std::string, RuleParams>>{
           {"LossNotDecreasing", {}},
           {"Overtraining", {}},
           {"Overfit", {}},
           {"ExplodingTensor", {}},
           {"VanishingGradient", {}},
           {"UnchangedTensor", {{"tensor_regex", "lr"}}},
           {"StalledTrainingRule", {}},
       }) {
    auto r = CreateRule(name, params);
    ASSERT_TRUE(r.ok()) << name;
    ASSERT_TRUE(runner.AddRule(std::move(r).value()).ok());
  }

  constexpr int64_t kSteps = 5000;
  constexpr int64_t kEvalEvery = 1000;  // an evaluation step every 1000
  int64_t train_step = 0, eval_step = 0;
  RunnerStats at_half;
  for (int64_t s = 0; s < kSteps; ++s) {
    const bool eval = s % kEvalEvery == kEvalEvery - 1;
    ASSERT_TRUE(
        (*w)->BeginStep(s, eval ? Mode::kEval : Mode::kTrain, eval ? eval_step++ : train_step++)
            .ok());
    // A noisy loss that keeps decreasing slowly, a gradient norm and a learning rate.
    const float loss = 3.0f / (1.0f + 0.001f * static_cast<float>(s)) *
                       (1.0f + 0.01f * static_cast<float>((s * 7919) % 13 - 6) / 6.0f);
    const float grad = 0.01f + 0.001f * static_cast<float>(s % 5);
    const float lr = 0.1f * static_cast<float>(s % 3 + 1);
    ASSERT_TRUE(
        (*w)->AddTensor("CrossEntropyLoss_output_0", TensorView::Scalar(DType::kF32, &loss)).ok());
    ASSERT_TRUE((*w)->AddTensor("gradient/fc.weight", TensorView::Scalar(DType::kF32, &grad)).ok());
    ASSERT_TRUE((*w)->AddTensor("lr", TensorView::Scalar(DType::kF32, &lr)).ok());
    ASSERT_TRUE((*w)->EndStep().ok());
    clock_us += 1000;
    if (s % 500 == 499) {
      ASSERT_TRUE((*w)->Flush().ok());
      auto done = runner.Poll();
      ASSERT_TRUE(done.ok()) << done.status().ToString();
      ASSERT_FALSE(*done);
    }
    if (s == 2499) at_half = runner.stats();
  }
  ASSERT_TRUE((*w)->Close().ok());
  bool done = false;
  for (int i = 0; i < 100 && !done; ++i) {
    auto r = runner.Poll();
    ASSERT_TRUE(r.ok());
    done = *r;
  }
  ASSERT_TRUE(done);
  const RunnerStats end = runner.stats();
  EXPECT_EQ(at_half.steps_evaluated, 2500);
  EXPECT_EQ(end.steps_evaluated, kSteps);
  EXPECT_EQ(end.last_step, kSteps - 1);
  // The cache holds at most max_cached_steps steps of a handful of entries, then and now.
  EXPECT_LE(at_half.data.cached_steps, 2u);
  EXPECT_LE(end.data.cached_steps, 2u);
  EXPECT_LE(end.data.cached_entries, 2u * 20);
  EXPECT_GT(end.data.evictions, kSteps - 10);
  // Rule state did not grow with the steps.
  EXPECT_EQ(end.rule_state_bytes, at_half.rule_state_bytes);
  EXPECT_LT(end.rule_state_bytes, 16u * 1024);
  // (rule, tensor) keys are bounded by tensors x rules, not by steps.
  EXPECT_LE(end.tracked_tensor_keys, 3 * 20);
  // Each step's three tensors were read once, whatever the number of rules.
  EXPECT_LE(end.data.value_reads, 3 * kSteps + 2 * kSteps / 1000);
  for (const auto& st : runner.states()) {
    EXPECT_TRUE(st.finished) << st.rule;
    EXPECT_NE(st.status, RuleEvaluationStatus::kError) << st.rule << ": " << st.message;
  }
}

}  // namespace
}  // namespace trainscope::rules_test
