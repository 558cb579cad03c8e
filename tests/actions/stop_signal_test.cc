#include "trainscope/stop_signal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "actions/test_util.h"
#include "trainscope/stop_action.h"
#include "trainscope/stop_signal_c.h"

namespace trainscope {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

StopRequest Request(std::string rule, int64_t step) {
  StopRequest r;
  r.rule = std::move(rule);
  r.step = step;
  r.mode = Mode::kTrain;
  r.explanation = "loss is NaN";
  r.recommendation = "lower the learning rate";
  r.time_micros = 1795255200000000;
  return r;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

// Sets an environment variable for the scope of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(StopSignalTest, RaiseThenCheckAndRead) {
  TempDir trial;
  StopSignal signal(trial.path());
  EXPECT_FALSE(signal.Check());
  EXPECT_FALSE(StopSignal::Check(trial.path()));
  EXPECT_EQ(signal.Read().status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(StopSignal::Raise(Env::Default(), trial.path(), Request("ExplodingTensor", 12)).ok());
  EXPECT_TRUE(signal.Check());
  EXPECT_TRUE(StopSignal::Check(trial.path()));
  EXPECT_EQ(signal.path(), trial.path() + "/rule-output/stop_training.json");

  auto r = signal.Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, "rule");
  EXPECT_EQ(r->rule, "ExplodingTensor");
  EXPECT_EQ(r->step, 12);
  EXPECT_EQ(r->mode, Mode::kTrain);
  EXPECT_EQ(r->explanation, "loss is NaN");
  EXPECT_EQ(r->recommendation, "lower the learning rate");
  EXPECT_EQ(r->time_micros, 1795255200000000);

  // The file is one JSON object with the documented keys, and nothing else is left behind.
  std::ifstream in(signal.path());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["rule"], "ExplodingTensor");
  EXPECT_EQ(j["time"], "2026-11-21T10:00:00.000000Z");
  EXPECT_TRUE(j.contains("pid") && j.contains("host"));
  EXPECT_EQ(Entries(trial.path() + "/rule-output"), std::vector<std::string>{"stop_training.json"});
}

TEST(StopSignalTest, FirstReasonWinsAndClearRemovesIt) {
  TempDir trial;
  ASSERT_TRUE(StopSignal::Raise(nullptr, trial.path(), Request("First", 1)).ok());
  ASSERT_TRUE(StopSignal::Raise(nullptr, trial.path(), Request("Second", 2)).ok());
  StopSignal signal(trial.path());
  EXPECT_EQ(signal.Read()->rule, "First");
  ASSERT_TRUE(StopSignal::Clear(nullptr, trial.path()).ok());
  EXPECT_FALSE(signal.Check());
  EXPECT_TRUE(StopSignal::Clear(nullptr, trial.path()).ok()) << "clearing nothing is fine";
  ASSERT_TRUE(StopSignal::Raise(nullptr, trial.path(), Request("Second", 2)).ok());
  EXPECT_EQ(signal.Read()->rule, "Second");
}

TEST(StopSignalTest, TouchedFileStopsWithUnknownReason) {
  TempDir trial;
  fs::create_directories(trial.path() + "/rule-output");
  std::ofstream(trial.path() + "/rule-output/stop_training.json").close();
  StopSignal signal(trial.path());
  EXPECT_TRUE(signal.Check());
  auto r = signal.Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, "unknown");
  // An empty file is the documented `touch`: no reason given (what the hook prints).
  EXPECT_EQ(r->explanation, "stop file present (no reason given)");
  EXPECT_EQ(r->ToString(), "a person at step ?: stop file present (no reason given)");

  // One that does not parse, or has a key of the wrong type, says it is unreadable and why.
  for (const char* text : {"garbage", "{\"step\": \"twelve\"}"}) {
    std::ofstream(signal.path()) << text;
    r = signal.Read();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->source, "unknown");
    EXPECT_NE(r->explanation.find("unreadable"), std::string::npos) << r->explanation;
    EXPECT_NE(r->explanation.find(signal.path()), std::string::npos) << r->explanation;
  }

  // A FIFO there (which the Env refuses to read, so nothing hangs) is present all the same.
  fs::remove(signal.path());
  ASSERT_EQ(::mkfifo(signal.path().c_str(), 0600), 0);
  EXPECT_TRUE(signal.Check());
  r = signal.Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, "unknown");
  EXPECT_NE(r->explanation.find("unreadable"), std::string::npos) << r->explanation;
}

// The one codec: every field the file carries reads back, the writer's host and pid included.
TEST(StopSignalTest, TheFileRoundTripsEveryField) {
  TempDir trial;
  ASSERT_TRUE(StopSignal::Raise(nullptr, trial.path(), Request("ExplodingTensor", 12)).ok());
  auto r = StopSignal(trial.path()).Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->pid, static_cast<int64_t>(::getpid()));
  EXPECT_FALSE(r->host.empty());
  auto again = StopRequestFromJson(StopRequestToJson(*r));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(StopRequestToJson(*again), StopRequestToJson(*r));
  EXPECT_EQ(r->ToString(), "ExplodingTensor at step 12: loss is NaN");

  StopRequest smdebug;
  smdebug.source = "smdebug";
  smdebug.explanation = "x";
  EXPECT_EQ(smdebug.ToString(), "an smdebug rule at step ?: x");
}

TEST(StopSignalTest, HonoursSmdebugEnvironmentVariable) {
  TempDir trial;
  {
    ScopedEnv env("SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE", "rule_stop_signal");
    StopSignal signal(trial.path());
    EXPECT_EQ(signal.smdebug_path(), trial.path() + "/rule_stop_signal");
    EXPECT_FALSE(signal.Check());
    std::ofstream(trial.path() + "/rule_stop_signal") << "1795255200\n";
    EXPECT_TRUE(signal.Check());
    EXPECT_TRUE(StopSignal::Check(trial.path()));
    auto r = signal.Read();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->source, "smdebug");
    EXPECT_EQ(r->time_micros, int64_t{1795255200} * 1000000);
    EXPECT_NE(r->explanation.find("SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE"), std::string::npos);
    EXPECT_NE(r->explanation.find(signal.smdebug_path()), std::string::npos) << r->explanation;
  }
  // Without the variable, smdebug's file means nothing.
  EXPECT_FALSE(StopSignal(trial.path()).Check());

  TempDir elsewhere;
  const std::string absolute = elsewhere.path() + "/stop_now";
  ScopedEnv env("SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE", absolute);
  StopSignal signal(trial.path());
  EXPECT_EQ(signal.smdebug_path(), absolute) << "an absolute name stands alone, as in smdebug";
  std::ofstream(absolute) << "garbage";
  EXPECT_TRUE(signal.Check());
  EXPECT_EQ(signal.Read()->time_micros, 0);
}

TEST(StopSignalTest, WorksOnTheInMemoryEnv) {
  auto env = NewMemEnv();
  StopSignal signal("/trial", env.get());
  EXPECT_FALSE(signal.Check());
  ASSERT_TRUE(StopSignal::Raise(env.get(), "/trial", Request("R", 3)).ok());
  EXPECT_TRUE(signal.Check());
  EXPECT_EQ(signal.Read()->step, 3);
  EXPECT_FALSE(StopSignal("/other", env.get()).Check());
}

TEST(StopSignalTest, FailedRenameLeavesNoSignalAndNoTemporaryFile) {
  TempDir trial;
  FaultInjectionEnv faulty(Env::Default());
  faulty.SetRenameFails(true);
  Status s = StopSignal::Raise(&faulty, trial.path(), Request("R", 1));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_NE(s.message().find("stop_training.json"), std::string::npos) << s.ToString();
  EXPECT_FALSE(StopSignal(trial.path()).Check());
  EXPECT_TRUE(Entries(trial.path() + "/rule-output").empty());
}

TEST(StopSignalTest, ConcurrentRaisersLeaveOneCompleteReason) {
  TempDir trial;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        (void)StopSignal::Raise(nullptr, trial.path(), Request("Rule" + std::to_string(t), i));
        (void)StopSignal::Clear(nullptr, trial.path());
      }
      (void)StopSignal::Raise(nullptr, trial.path(), Request("Rule" + std::to_string(t), 99));
    });
  }
  // Meanwhile a reader never sees a partial file.
  StopSignal signal(trial.path());
  int partial = 0;
  std::string example;
  for (int i = 0; i < 2000; ++i) {
    auto r = signal.Read();
    if (r.ok() && r->source != "rule") {
      ++partial;
      example = r->explanation;
    }
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(partial, 0) << "a reader saw a partial stop file: " << example;
  auto r = signal.Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->step, 99);
  EXPECT_EQ(Entries(trial.path() + "/rule-output"), std::vector<std::string>{"stop_training.json"});
}

// Holds the first raiser between its check (no stop file yet) and its publishing, until a second
// raiser has published: the race two rule workers finding one problem at once can run.
class HoldFirstRaiserEnv : public FaultInjectionEnv {
 public:
  using FaultInjectionEnv::FaultInjectionEnv;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    {
      std::unique_lock<std::mutex> l(mu_);
      if (!seen_first_) {
        seen_first_ = true;
        cv_.notify_all();
        cv_.wait_for(l, std::chrono::seconds(10), [&] { return released_; });
      }
    }
    return FaultInjectionEnv::NewWritableFile(path);
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }
  void WaitFirst() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, std::chrono::seconds(10), [&] { return seen_first_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool seen_first_ = false, released_ = false;
};

TEST(StopSignalTest, OfTwoRaisersAtOnceThePublishedReasonNeverChanges) {
  TempDir trial;
  HoldFirstRaiserEnv env(Env::Default());
  Status late;
  std::thread first([&] { late = StopSignal::Raise(&env, trial.path(), Request("Late", 1)); });
  env.WaitFirst();  // "Late" saw no stop file and is held before writing its own
  ASSERT_TRUE(StopSignal::Raise(&env, trial.path(), Request("Early", 2)).ok());
  auto seen = StopSignal(trial.path()).Read();  // what a training reads now
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->rule, "Early");
  env.Release();
  first.join();
  EXPECT_TRUE(late.ok()) << late.ToString();  // losing the race is not an error
  auto after = StopSignal(trial.path()).Read();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->rule, "Early") << "the stop reason changed after a training could read it";
  EXPECT_EQ(Entries(trial.path() + "/rule-output"), std::vector<std::string>{"stop_training.json"});
}

TEST(StopSignalTest, AnotherProcessSeesTheStop) {
  TempDir trial;
  pid_t pid = ::fork();
  if (pid == 0) {
    // The "rule worker": raise and exit.
    Status s = StopSignal::Raise(nullptr, trial.path(), Request("ChildRule", 5));
    ::_exit(s.ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  StopSignal signal(trial.path());
  EXPECT_TRUE(signal.Check());
  EXPECT_EQ(signal.Read()->rule, "ChildRule");
}

TEST(StopSignalTest, StopActionRaisesOnFindingsOnly) {
  TempDir trial;
  std::vector<ActionOutcome> outcomes;
  auto action = NewStopTrainingAction(nullptr, trial.path(),
                                      [&](const ActionOutcome& o) { outcomes.push_back(o); });
  EXPECT_EQ(action->kind(), "stop");
  ASSERT_TRUE(
      action->Notify(RuleFinding::StatusChange("R", RuleEvaluationStatus::kNoIssuesFound)).ok());
  EXPECT_FALSE(StopSignal::Check(trial.path())) << "a status change does not stop training";
  EXPECT_TRUE(outcomes.empty());

  RuleFinding f;
  f.rule = "LossNotDecreasing";
  f.step = 700;
  f.explanation = "loss rose for 3 windows";
  ASSERT_TRUE(action->Notify(f).ok());
  StopSignal signal(trial.path());
  ASSERT_TRUE(signal.Check());
  EXPECT_EQ(signal.Read()->rule, "LossNotDecreasing");
  EXPECT_EQ(signal.Read()->explanation, "loss rose for 3 windows");
  EXPECT_GT(signal.Read()->time_micros, 0) << "stamped when the finding had no time";
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].result, ActionResult::kDone);
  EXPECT_EQ(outcomes[0].step, 700);
  EXPECT_EQ(outcomes[0].target, signal.path());
}

TEST(StopSignalCTest, CInterface) {
  TempDir trial;
  trainscope_stop_signal* h = trainscope_stop_signal_open(trial.path().c_str());
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(trainscope_stop_signal_check(h), 0);
  EXPECT_EQ(trainscope_stop_requested(trial.path().c_str()), 0);
  EXPECT_EQ(trainscope_stop_reason(trial.path().c_str(), nullptr, 0), -1);

  ASSERT_EQ(trainscope_request_stop(trial.path().c_str(), "user pressed stop"), 0);
  EXPECT_EQ(trainscope_stop_signal_check(h), 1);
  EXPECT_EQ(trainscope_stop_requested(trial.path().c_str()), 1);

  long n = trainscope_stop_reason(trial.path().c_str(), nullptr, 0);
  ASSERT_GT(n, 0);
  char small[8] = "unset";
  EXPECT_EQ(trainscope_stop_reason(trial.path().c_str(), small, sizeof(small)), n);
  EXPECT_STREQ(small, "unset") << "too small a buffer is left alone";
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  EXPECT_EQ(trainscope_stop_reason(trial.path().c_str(), buf.data(), buf.size()), n);
  auto j = nlohmann::json::parse(buf.data());
  EXPECT_EQ(j["source"], "user");
  EXPECT_EQ(j["explanation"], "user pressed stop");

  trainscope_stop_signal_close(h);
  EXPECT_EQ(trainscope_stop_signal_check(nullptr), 0);
  EXPECT_EQ(trainscope_stop_requested(nullptr), 0);
}

}  // namespace
}  // namespace trainscope
