// Stop requests reaching a native trainer: a real trial folder, the stop file written by the
// rules' StopTraining action (actions module), and the trial read back with Trial::Open.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "actions/test_util.h"
#include "trainscope/hook.h"
#include "trainscope/stop_action.h"
#include "trainscope/stop_signal.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"

namespace trainscope {
namespace {

using testing::TempDir;

// The real file system, counting the hook's checks of the stop file.
class CountingEnv : public FaultInjectionEnv {
 public:
  CountingEnv() : FaultInjectionEnv(Env::Default()) {}
  bool FileExists(const std::string& path) override {
    if (std::string_view(path).ends_with("/stop_training.json")) ++stop_checks;
    return FaultInjectionEnv::FileExists(path);
  }
  // The clock the hook's check interval reads: set_now() makes it a fake one.
  uint64_t NowMicros() override {
    const uint64_t t = now_us.load();
    return t != 0 ? t : FaultInjectionEnv::NowMicros();
  }
  std::atomic<int64_t> stop_checks{0};
  std::atomic<uint64_t> now_us{0};
};

HookConfig Config(const std::string& out_dir, Env* env) {
  HookConfig c;
  c.out_dir = out_dir;
  c.env = env;
  c.quiet = true;  // the stop line is printed all the same
  c.rank = 0;
  c.world_size = 1;
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  c.stop_check_interval_ms = 0;  // every Step() looks (the interval has its own test)
  return c;
}

std::unique_ptr<Hook> MakeHook(HookConfig c) {
  auto h = Hook::Create(std::move(c));
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? std::move(h).value() : nullptr;
}

// Step s saves "Net_fc.weight" = [s, s + 1] and "scalar/loss" = s.
void SaveStep(Hook& hook, int64_t s) {
  const float w[2] = {static_cast<float>(s), static_cast<float>(s + 1)};
  ASSERT_TRUE(hook.SaveTensor("Net_fc.weight", {DType::kF32, w, {2}, {}, {}}).ok());
  ASSERT_TRUE(hook.SaveScalar("loss", static_cast<double>(s)).ok());
}

TEST(HookStopTest, TheNextStepBoundaryStopsClosesAndSaysWhy) {
  TempDir tmp;
  const std::string trial_dir = tmp.path() + "/trial";
  CountingEnv env;
  auto hook = MakeHook(Config(trial_dir, &env));
  ASSERT_NE(hook, nullptr);
  hook->SetMode(Mode::kTrain);
  for (int64_t s = 0; s < 5; ++s) {
    ASSERT_TRUE(hook->Step());
    SaveStep(*hook, s);
  }

  // What `trainscope run --action stop` does on a finding, while step 4 is still in progress.
  RuleFinding finding;
  finding.rule = "LossNotDecreasing";
  finding.step = 3;
  finding.mode = Mode::kTrain;
  finding.explanation = "loss did not decrease over the last 3 steps";
  auto action = NewStopTrainingAction(Env::Default(), trial_dir);
  ASSERT_TRUE(action->Notify(finding).ok());

  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(hook->Step());
  EXPECT_FALSE(hook->Step());  // already closed: no second check, no second line
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "trainscope: training stopped on request of LossNotDecreasing at step 3: loss did "
            "not decrease over the last 3 steps\n");
  EXPECT_EQ(env.stop_checks.load(), 6);  // one per step boundary that ran

  EXPECT_TRUE(hook->StopRequested());
  EXPECT_EQ(hook->stop_reason().rule, "LossNotDecreasing");
  EXPECT_EQ(hook->stop_reason().step, 3);
  EXPECT_EQ(hook->stop_reason().explanation, "loss did not decrease over the last 3 steps");
  EXPECT_TRUE(hook->closed());
  EXPECT_EQ(hook->step(), 4);  // no step began after the request
  EXPECT_TRUE(hook->first_error().ok()) << hook->first_error().ToString();
  EXPECT_TRUE(env.FileExists(JoinPath(trial_dir, trial_format::kEndOfJobFile)));

  // Every step saved before the stop, the one in progress included, reads back.
  auto trial = Trial::Open(trial_dir);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  EXPECT_TRUE((*trial)->training_ended());
  EXPECT_EQ((*trial)->Steps(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  for (int64_t s = 0; s < 5; ++s) {
    auto w = (*trial)->Value("Net_fc.weight", s);
    ASSERT_TRUE(w.ok()) << s << ": " << w.status().ToString();
    ASSERT_EQ(w->dtype, DType::kF32);
    ASSERT_EQ(w->num_elements(), 2);
    EXPECT_EQ(static_cast<const float*>(w->data)[0], static_cast<float>(s));
    EXPECT_EQ(static_cast<const float*>(w->data)[1], static_cast<float>(s + 1));
    auto loss = (*trial)->Value("scalar/loss", s);
    ASSERT_TRUE(loss.ok()) << s << ": " << loss.status().ToString();
    EXPECT_EQ(static_cast<const double*>(loss->data)[0], static_cast<double>(s));
  }
}

// With the default interval (10 ms) the file is looked for at the first Step() and then at the
// first Step() 10 ms or more after the last look: a 0.3 ms step pays a clock read, not a syscall.
TEST(HookStopTest, TheStopFileIsLookedForOncePerCheckInterval) {
  TempDir tmp;
  const std::string trial_dir = tmp.path() + "/trial";
  CountingEnv env;
  env.now_us = 1'000'000;
  HookConfig c = Config(trial_dir, &env);
  c.stop_check_interval_ms = HookConfig{}.stop_check_interval_ms;
  ASSERT_EQ(c.stop_check_interval_ms, 10);
  auto hook = MakeHook(std::move(c));
  ASSERT_NE(hook, nullptr);
  ASSERT_TRUE(hook->Step());
  EXPECT_EQ(env.stop_checks.load(), 1);  // the first step looks

  ASSERT_TRUE(Env::Default()->CreateDirs(trial_dir + "/rule-output").ok());
  std::ofstream(StopSignal::PathFor(trial_dir)).close();
  for (int i = 0; i < 30; ++i) {  // 30 steps of 0.3 ms: 9 ms since the look
    env.now_us += 300;
    ASSERT_TRUE(hook->Step()) << i;
  }
  EXPECT_EQ(env.stop_checks.load(), 1);
  EXPECT_FALSE(hook->StopRequested());

  ::testing::internal::CaptureStderr();
  env.now_us += 1000;  // 10 ms since the look
  EXPECT_FALSE(hook->Step());
  EXPECT_EQ(env.stop_checks.load(), 2);
  EXPECT_TRUE(hook->StopRequested());
  EXPECT_EQ(hook->step(), 30);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("training stopped"), std::string::npos);
}

// A clock that goes back (a wall clock set back) does not delay the next look by the jump.
TEST(HookStopTest, AClockThatGoesBackDoesNotPostponeTheLook) {
  TempDir tmp;
  const std::string trial_dir = tmp.path() + "/trial";
  CountingEnv env;
  env.now_us = 5'000'000'000;
  HookConfig c = Config(trial_dir, &env);
  c.stop_check_interval_ms = 10;
  auto hook = MakeHook(std::move(c));
  ASSERT_NE(hook, nullptr);
  ASSERT_TRUE(hook->Step());
  env.now_us = 1'000'000;  // an hour and more back
  ASSERT_TRUE(hook->Step());
  EXPECT_EQ(env.stop_checks.load(), 2);
  env.now_us += 100;
  ASSERT_TRUE(hook->Step());
  EXPECT_EQ(env.stop_checks.load(), 2);
  ASSERT_TRUE(hook->Close().ok());
}

TEST(HookStopTest, WithoutTheStopFileNothingIsReported) {
  TempDir tmp;
  const std::string trial_dir = tmp.path() + "/trial";
  CountingEnv env;
  auto hook = MakeHook(Config(trial_dir, &env));
  ASSERT_NE(hook, nullptr);
  // rule-output/ exists with a rule's files in it, but nobody asked to stop.
  ASSERT_TRUE(env.CreateDirs(trial_dir + "/rule-output/LossNotDecreasing").ok());

  ::testing::internal::CaptureStderr();
  for (int64_t s = 0; s < 20; ++s) {
    ASSERT_TRUE(hook->Step());
    SaveStep(*hook, s);
    EXPECT_FALSE(hook->StopRequested());
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(env.stop_checks.load(), 20);
  EXPECT_FALSE(hook->closed());
  EXPECT_TRUE(hook->stop_reason().rule.empty());
  EXPECT_EQ(hook->stop_reason().step, -1);
  EXPECT_TRUE(hook->stop_reason().explanation.empty());
  ASSERT_TRUE(hook->Close().ok());
  EXPECT_FALSE(hook->StopRequested());

  auto trial = Trial::Open(trial_dir);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  EXPECT_EQ((*trial)->Steps().size(), 20u);
}

// A stop file made by hand (`touch`) stops training too, on a rank that writes nothing as well.
TEST(HookStopTest, AnEmptyStopFileStopsEveryRank) {
  TempDir tmp;
  const std::string trial_dir = tmp.path() + "/trial";
  HookConfig c = Config(trial_dir, nullptr);
  c.rank = 1;
  c.world_size = 2;  // include_workers = one: rank 1 writes nothing
  auto hook = MakeHook(std::move(c));
  ASSERT_NE(hook, nullptr);
  ASSERT_FALSE(hook->writes());
  ASSERT_TRUE(hook->Step());
  ASSERT_TRUE(Env::Default()->CreateDirs(trial_dir + "/rule-output").ok());
  std::ofstream(StopSignal::PathFor(trial_dir)).close();

  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(hook->Step());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "trainscope: training stopped on request of a person at step ?: stop file present "
            "(no reason given)\n");
  EXPECT_TRUE(hook->StopRequested());
  EXPECT_TRUE(hook->closed());
  EXPECT_TRUE(hook->stop_reason().rule.empty());
  EXPECT_EQ(hook->stop_reason().step, -1);
}

// smdebug's convention (docs/formats/stop_signal.md): with SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE set
// when the hook is made, the file it names (joined to out_dir) stops the training when it appears,
// as trainscope's own stop file does; made without the variable, the hook ignores that file.
TEST(HookStopTest, SmdebugsStopFileStopsWhenItAppears) {
  TempDir tmp;
  const std::string trial_dir = tmp.path() + "/trial";
  ::setenv("SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE", "rule_stop", 1);
  auto hook = MakeHook(Config(trial_dir, nullptr));
  ::unsetenv("SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE");  // read once, at Create
  auto deaf = MakeHook(Config(tmp.path() + "/other", nullptr));
  ASSERT_NE(hook, nullptr);
  ASSERT_NE(deaf, nullptr);
  hook->SetMode(Mode::kTrain);
  for (int64_t s = 0; s < 3; ++s) {
    ASSERT_TRUE(hook->Step());
    SaveStep(*hook, s);
  }
  // A SageMaker rule job writes the epoch seconds of its request.
  std::ofstream(trial_dir + "/rule_stop") << "1795255200";
  ASSERT_TRUE(deaf->Step());
  std::ofstream(tmp.path() + "/other/rule_stop") << "1795255200";

  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(hook->Step());
  EXPECT_TRUE(deaf->Step()) << "made without the variable: smdebug's file means nothing";
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "trainscope: training stopped on request of an smdebug rule at step ?: "
            "smdebug's rule stop file " +
                trial_dir + "/rule_stop (named by SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE)\n");
  EXPECT_TRUE(hook->StopRequested());
  EXPECT_EQ(hook->stop_reason().source, "smdebug");
  EXPECT_EQ(hook->stop_reason().time_micros, int64_t{1795255200} * 1000000);
  EXPECT_TRUE(hook->closed());
  EXPECT_EQ(hook->step(), 2);  // no step began after the request
  EXPECT_FALSE(deaf->StopRequested());
  ASSERT_TRUE(deaf->Close().ok());

  auto trial = Trial::Open(trial_dir);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  EXPECT_TRUE((*trial)->training_ended());
  EXPECT_EQ((*trial)->Steps(), (std::vector<int64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace trainscope
