// Short steps (capture/planner.h): a collection with min_save_period_ms has its save interval
// stretched once the hook has measured the steps; the first kThinFromStep steps, the listed
// save_steps and collections without the key are saved as configured.
#include <gtest/gtest.h>

#include <vector>

#include "capture/planner.h"
#include "trainscope/hook.h"
#include "trainscope/hook_config.h"

namespace trainscope {
namespace {

using capture::kThinFromStep;
using capture::StretchedInterval;

// The in-memory Env under a ClockEnv (a base, so that it is made before the wrapper).
struct MemEnvHolder {
  std::unique_ptr<Env> mem = NewMemEnv();
};

// In-memory files and a clock the test moves.
class ClockEnv : private MemEnvHolder, public FaultInjectionEnv {
 public:
  ClockEnv() : FaultInjectionEnv(mem.get()) {}
  uint64_t NowMicros() override { return now_us; }
  uint64_t now_us = 1'000'000;
};

TEST(StretchedIntervalTest, SmallestOneTwoFiveMultipleThatCoversThePeriod) {
  EXPECT_EQ(StretchedInterval(1, 100'000, 50'000), 1);  // 100 ms steps: every step
  EXPECT_EQ(StretchedInterval(1, 50'000, 50'000), 1);
  EXPECT_EQ(StretchedInterval(1, 30'000, 50'000), 2);
  EXPECT_EQ(StretchedInterval(1, 1'000, 50'000), 50);  // 1 ms steps: every 50th
  EXPECT_EQ(StretchedInterval(1, 900, 50'000), 100);
  EXPECT_EQ(StretchedInterval(10, 900, 50'000), 100);  // every 10 -> every 100: the same steps
  EXPECT_EQ(StretchedInterval(10, 20'000, 50'000), 10);
  EXPECT_EQ(StretchedInterval(3, 1'000, 50'000), 60);  // a multiple of the interval
  EXPECT_EQ(StretchedInterval(1, 0, 50'000), 1);       // not measured: as configured
  EXPECT_EQ(StretchedInterval(7, 1'000, 0), 7);
  EXPECT_EQ(StretchedInterval(1, 1, 1'000'000'000'000), 1'000'000);  // bounded
}

HookConfig ConfigFrom(const std::string& json, Env* env) {
  auto c = ParseHookConfigJson(json, "test");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  HookConfig out = c.ok() ? std::move(c).value() : HookConfig();
  out.env = env;
  out.quiet = true;
  out.rank = 0;
  out.world_size = 1;
  return out;
}

// Runs `steps` steps of `step_us` each; the steps that were saving steps.
std::vector<int64_t> SavingSteps(Hook* hook, ClockEnv* env, int64_t steps, uint64_t step_us) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < steps; ++i) {
    if (hook->Step()) out.push_back(hook->step());
    env->now_us += step_us;
  }
  return out;
}

constexpr const char* kLossesEveryStep = R"({
  "LocalPath": "/trial",
  "CollectionConfigurations": [
    {"CollectionName": "losses",
     "CollectionParameters": {"save_interval": "1", "min_save_period_ms": "50"}},
    {"CollectionName": "weights",
     "CollectionParameters": {"save_interval": "10", "save_steps": "205",
                              "min_save_period_ms": "50"}}]})";

TEST(ShortStepsTest, OneMillisecondStepsAreSavedEveryFiftiethAfterTheFirstSteps) {
  ClockEnv env;
  auto hook = Hook::Create(ConfigFrom(kLossesEveryStep, &env));
  ASSERT_TRUE(hook.ok()) << hook.status().ToString();
  const auto saving = SavingSteps(hook->get(), &env, 400, 1'000);
  std::vector<int64_t> expected;
  for (int64_t s = 0; s < kThinFromStep; ++s) expected.push_back(s);
  for (int64_t s : {200, 205, 250, 300, 350}) expected.push_back(s);
  EXPECT_EQ(saving, expected);
}

TEST(ShortStepsTest, LongStepsKeepTheConfiguredSchedule) {
  ClockEnv env;
  auto hook = Hook::Create(ConfigFrom(kLossesEveryStep, &env));
  ASSERT_TRUE(hook.ok()) << hook.status().ToString();
  const auto saving = SavingSteps(hook->get(), &env, 300, 60'000);  // 60 ms steps
  EXPECT_EQ(saving.size(), 300u);
}

TEST(ShortStepsTest, WithoutTheKeyEveryStepIsSaved) {
  ClockEnv env;
  auto hook = Hook::Create(ConfigFrom(R"({"LocalPath": "/trial", "CollectionConfigurations": [
      {"CollectionName": "losses", "CollectionParameters": {"save_interval": "1"}}]})",
                                      &env));
  ASSERT_TRUE(hook.ok()) << hook.status().ToString();
  EXPECT_EQ(SavingSteps(hook->get(), &env, 400, 1'000).size(), 400u);
}

TEST(ShortStepsTest, TheKeyIsParsedAndANegativePeriodRefused) {
  auto c = ParseHookConfigJson(kLossesEveryStep, "test");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->collections.Get("losses")->min_save_period_ms(), 50);
  EXPECT_TRUE(c->warnings.empty());
  auto bad = ParseHookConfigJson(R"({"LocalPath": "/t", "CollectionConfigurations": [
      {"CollectionName": "losses", "CollectionParameters": {"min_save_period_ms": "-1"}}]})",
                                 "test");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("min_save_period_ms"), std::string::npos);
}

}  // namespace
}  // namespace trainscope
