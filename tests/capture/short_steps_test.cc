// Short steps (capture/planner.h): a collection with min_save_period_ms has its save interval
// stretched once the hook has measured the steps; the first kThinFromStep steps, the listed
// save_steps and collections without the key are saved as configured.
#include <gtest/gtest.h>

#include <random>
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

// A hook saving the losses every `interval` steps, without min_save_period_ms.
std::unique_ptr<Hook> LossesEvery(int interval, ClockEnv* env) {
  auto hook = Hook::Create(ConfigFrom(R"({"LocalPath": "/trial", "CollectionConfigurations": [
      {"CollectionName": "losses", "CollectionParameters": {"save_interval": ")" +
                                          std::to_string(interval) + R"("}}]})",
                                      env));
  EXPECT_TRUE(hook.ok()) << hook.status().ToString();
  return hook.ok() ? std::move(hook).value() : nullptr;
}

// A collection saved raw keeps its saving steps (its raw bytes) / kRawBytesPerSecond apart
// from kThinFromStep on; a small one on the same schedule keeps it; one of reductions only is
// not stretched by the bytes of the raw values it shares a step with.
TEST(ShortStepsTest, ACollectionSavedRawIsStretchedToItsBytesPerSecond) {
  ClockEnv env;
  HookConfig config = ConfigFrom(R"({"LocalPath": "/trial", "CollectionConfigurations": [
      {"CollectionName": "big", "CollectionParameters": {"include_regex": "^w$",
        "save_interval": "10", "min_save_period_ms": "50"}},
      {"CollectionName": "small", "CollectionParameters": {"include_regex": "^s$",
        "save_interval": "10", "min_save_period_ms": "50"}},
      {"CollectionName": "stats", "CollectionParameters": {"include_regex": "^w$",
        "save_interval": "10", "min_save_period_ms": "50", "reductions": "mean",
        "save_raw_tensor": "false"}}]})",
                                 &env);
  config.dry_run = true;  // planned and counted, not written
  auto hook = Hook::Create(std::move(config));
  ASSERT_TRUE(hook.ok()) << hook.status().ToString();
  Hook& h = **hook;
  // 8 MB raw a saving step: at 4 MiB/s, 1.9 s apart; the steps last 100 ms, so every 10th
  // step (1 s) becomes every 20th.
  const std::vector<float> big(2'000'000, 1.0F);
  const std::vector<float> small(16, 1.0F);
  const TensorView big_view{DType::kF32, big.data(), {static_cast<int64_t>(big.size())}, {}, {}};
  const TensorView small_view{
      DType::kF32, small.data(), {static_cast<int64_t>(small.size())}, {}, {}};
  std::vector<int64_t> big_steps;
  std::vector<int64_t> small_steps;
  for (int i = 0; i < 400; ++i) {
    (void)h.Step();
    if (h.Plan("w").save_raw) {
      big_steps.push_back(h.step());
      ASSERT_TRUE(h.SaveTensor("w", big_view).ok());
    }
    if (h.Plan("s").save) {
      small_steps.push_back(h.step());
      ASSERT_TRUE(h.SaveTensor("s", small_view).ok());
    }
    env.now_us += 100'000;
  }
  std::vector<int64_t> every10;
  std::vector<int64_t> stretched;
  for (int64_t s = 0; s < 400; s += 10) {
    every10.push_back(s);
    if (s < kThinFromStep || s % 20 == 0) stretched.push_back(s);
  }
  EXPECT_EQ(big_steps, stretched);
  EXPECT_EQ(small_steps, every10);
  // The steps between the raw saves keep the reductions of "stats" (the same tensor).
  (void)h.Step();  // step 400: all three due
  EXPECT_TRUE(h.Plan("w").save_raw);
  ASSERT_TRUE(h.SaveTensor("w", big_view).ok());
  for (int i = 0; i < 10; ++i) {
    env.now_us += 100'000;
    (void)h.Step();
  }
  EXPECT_EQ(h.step(), 410);
  EXPECT_TRUE(h.Plan("w").save);
  EXPECT_FALSE(h.Plan("w").save_raw);
  EXPECT_EQ(h.Plan("w").reductions.size(), 1u);
}

// The step time moves between measurements, and with it the stretched interval (here 200 and
// 500 steps in turn, 32 steps at a time): the collection is still saved at least every 500
// steps, where multiples alone of whichever interval holds at the time would skip them all
// (step 400: 500 holds; step 500: 200 holds; ...), and never as often as its own interval.
TEST(ShortStepsTest, AStepTimeThatMovesDoesNotSkipEverySavingStep) {
  CollectionManager collections;
  HookConfig config;
  config.include_collections = std::vector<std::string>{"w"};
  auto c = collections.GetOrCreate("w");
  ASSERT_TRUE(c->Include(".*").ok());
  SaveConfigMode every10;
  every10.save_interval = 10;
  ASSERT_TRUE(c->set_save_config(SaveConfig(every10)).ok());
  ASSERT_TRUE(c->set_min_save_period_ms(1000).ok());  // 1 s apart
  capture::Planner planner;
  ASSERT_TRUE(planner.Prepare(collections, config, false).ok());
  std::vector<int64_t> saved;
  for (int64_t step = 0; step < 2000; ++step) {
    // 5 ms steps (every 200th) and 2 ms steps (every 500th), alternating every 32 steps
    if (step % 32 == 0) planner.SetStepMicros(Mode::kTrain, (step / 32) % 2 == 0 ? 5'000 : 2'000);
    if (planner.DueMask(Mode::kTrain, step) != 0) saved.push_back(step);
  }
  ASSERT_FALSE(saved.empty());
  std::vector<int64_t> after;
  std::string seen;
  for (int64_t s : saved) {
    if (s >= kThinFromStep) after.push_back(s);
    if (s >= kThinFromStep) seen += std::to_string(s) + " ";
  }
  SCOPED_TRACE("saved after step 200: " + seen);
  ASSERT_GE(after.size(), 3u);
  EXPECT_LE(after.front(), 700);
  for (size_t k = 1; k < after.size(); ++k) {
    EXPECT_GE(after[k] - after[k - 1], 100) << after[k];
    EXPECT_LE(after[k] - after[k - 1], 500) << after[k];
  }
}

TEST(ShortStepsTest, WithoutTheKeyEveryStepIsSaved) {
  ClockEnv env;
  auto hook = LossesEvery(1, &env);
  ASSERT_NE(hook, nullptr);
  EXPECT_EQ(SavingSteps(hook.get(), &env, 400, 1'000).size(), 400u);
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

// A planner's DueMask remembers the steps ahead at which nothing is due (a quiet step reads no
// collection); over random schedules (intervals, start and end steps, save_steps, stretched
// periods whose step time changes, raw bytes that lengthen them, a train-only collection, TRAIN
// and EVAL steps), a planner asked at every step must give the masks of one with the same
// history that forgets its quiet steps before each step.
TEST(ShortStepsTest, TheQuietStepsAPlannerRemembersAreTheOnesItWouldCompute) {
  std::mt19937 rng(20261127);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int64_t masks_checked = 0;
  int64_t nonzero = 0;
  for (int round = 0; round < 60; ++round) {
    CollectionManager collections;
    HookConfig config;
    config.include_collections = std::vector<std::string>{};
    const int n = static_cast<int>(pick(1, 4));
    for (int i = 0; i < n; ++i) {
      // "gradients" is train-only: EVAL steps skip it.
      const std::string name = i == 0 && pick(0, 1) == 1 ? "gradients" : "c" + std::to_string(i);
      auto c = collections.GetOrCreate(name);
      ASSERT_TRUE(c->Include(".*").ok());
      SaveConfig sc;
      for (Mode m : {Mode::kTrain, Mode::kEval}) {
        if (pick(0, 5) == 0) continue;  // unset: the hook's default (every 500th) is merged in
        SaveConfigMode sm;
        sm.save_interval = std::vector<int64_t>{1, 1, 2, 3, 7, 10, 50, 1000}[pick(0, 7)];
        sm.start_step = pick(0, 3) == 0 ? pick(0, 300) : 0;
        if (pick(0, 3) == 0) sm.end_step = pick(0, 600);
        for (int k = static_cast<int>(pick(0, 3)); k > 0; --k)
          sm.save_steps.push_back(pick(0, 700));
        sc.set_mode(m, sm);
      }
      ASSERT_TRUE(c->set_save_config(sc).ok());
      if (pick(0, 1) == 1) {
        ASSERT_TRUE(c->set_min_save_period_ms(pick(1, 80)).ok());
      }
      config.include_collections->push_back(name);
    }
    capture::Planner cached;
    capture::Planner fresh;
    ASSERT_TRUE(cached.Prepare(collections, config, false).ok());
    int64_t steps[2] = {0, 0};  // TRAIN, EVAL
    ASSERT_TRUE(fresh.Prepare(collections, config, false).ok());
    for (int i = 0; i < 1200; ++i) {
      const Mode mode = pick(0, 9) == 0 ? Mode::kEval : Mode::kTrain;
      int64_t& step = steps[mode == Mode::kEval ? 1 : 0];
      if (pick(0, 99) == 0) {  // the hook measured the mode's steps again
        const int64_t us = std::vector<int64_t>{0, 300, 1'000, 20'000, 100'000}[pick(0, 4)];
        cached.SetStepMicros(mode, us);
        fresh.SetStepMicros(mode, us);
      }
      fresh.ForgetQuietSteps();
      const uint64_t want = fresh.DueMask(mode, step);
      ASSERT_EQ(cached.DueMask(mode, step), want)
          << "round " << round << ", mode " << ModeName(mode) << " step " << step;
      if (want != 0) {  // a saving step: "t" (in every collection) saves a raw value
        const uint64_t bytes =
            std::vector<uint64_t>{0, 1'000, 400'000, 40'000'000}[static_cast<size_t>(pick(0, 3))];
        for (capture::Planner* p : {&cached, &fresh}) {
          if (p->Plan("t", want).save_raw && bytes > 0) p->NoteRawBytes("t", want, bytes);
          p->EndSavingStep(want);
        }
      }
      ++masks_checked;
      nonzero += want != 0 ? 1 : 0;
      ++step;
    }
  }
  EXPECT_EQ(masks_checked, 60 * 1200);
  EXPECT_GT(nonzero, masks_checked / 20);  // the schedules were not all quiet
  EXPECT_LT(nonzero, masks_checked / 2);   // nor all busy
}

// The hook looks at its collections at a step boundary only when some collection changed
// (CollectionManager::MutationCount): every change is one, and a change between steps is
// planned for at the next step.
TEST(ShortStepsTest, EveryCollectionChangeMovesTheMutationCount) {
  CollectionManager m;
  uint64_t last = CollectionManager::MutationCount();
  auto moved = [&] {
    const uint64_t now = CollectionManager::MutationCount();
    const bool changed = now != last;
    last = now;
    return changed;
  };
  auto c = m.GetOrCreate("c");
  EXPECT_TRUE(moved());
  EXPECT_FALSE(moved());
  ASSERT_TRUE(c->Include("a").ok());
  EXPECT_TRUE(moved());
  c->AddTensorName("t");
  EXPECT_TRUE(moved());
  c->AddTensorName("t");  // already there: no change
  EXPECT_FALSE(moved());
  c->set_save_histogram(false);
  EXPECT_TRUE(moved());
  ASSERT_TRUE(c->set_save_config(SaveConfig(SaveConfigMode{})).ok());
  EXPECT_TRUE(moved());
  Collection other("c");
  const uint64_t v = m.version();
  *c = other;  // assigned: a change even where the two versions are the same
  EXPECT_TRUE(moved());
  EXPECT_NE(m.version(), v);
  m.SetParameterTrainable("w", true);
  EXPECT_TRUE(moved());
  m.SetModuleOrder({});
  EXPECT_TRUE(moved());
}

TEST(ShortStepsTest, ACollectionChangedBetweenStepsIsSavedFromTheNextStep) {
  ClockEnv env;
  auto hook = LossesEvery(100, &env);
  ASSERT_NE(hook, nullptr);
  Hook& h = *hook;
  EXPECT_EQ(SavingSteps(&h, &env, 10, 1'000), std::vector<int64_t>({0}));
  SaveConfigMode every;
  every.save_interval = 1;
  ASSERT_TRUE(h.collections().Get("losses")->set_save_config(SaveConfig(every)).ok());
  EXPECT_EQ(SavingSteps(&h, &env, 3, 1'000), std::vector<int64_t>({10, 11, 12}));
}

}  // namespace
}  // namespace trainscope
