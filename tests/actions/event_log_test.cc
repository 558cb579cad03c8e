#include "trainscope/event_log.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "actions/test_util.h"

namespace trainscope {
namespace {

using testing::TempDir;

RuleFinding MakeFinding(std::string rule, int64_t step) {
  RuleFinding f;
  f.rule = std::move(rule);
  f.step = step;
  f.tensor = "loss";
  f.value = 7.5;
  f.explanation = "loss went up";
  f.time_micros = 1795255200000000 + step;
  return f;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(EventLogTest, WritesOneJsonLinePerEventAndReadsThemBack) {
  TempDir trial;
  auto log = EventLog::Open(nullptr, trial.path());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->path(), trial.path() + "/rule-output/events.log.jsonl");
  ASSERT_TRUE((*log)->LogFinding(MakeFinding("LossNotDecreasing", 10)).ok());
  ASSERT_TRUE((*log)
                  ->LogFinding(RuleFinding::StatusChange("LossNotDecreasing",
                                                         RuleEvaluationStatus::kIssuesFound))
                  .ok());
  ActionOutcome o;
  o.action = "webhook";
  o.target = "http://127.0.0.1:9/h";
  o.rule = "LossNotDecreasing";
  o.step = 10;
  o.result = ActionResult::kFailed;
  o.attempts = 4;
  o.detail = "HTTP 503";
  o.time_micros = 1795255201000000;
  ASSERT_TRUE((*log)->LogAction(o).ok());
  EXPECT_EQ((*log)->lines_written(), 3u);

  // Flushed as logged: another reader sees every line while the log is still open.
  auto lines = Lines((*log)->path());
  ASSERT_EQ(lines.size(), 3u);
  auto first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["v"], 1);
  EXPECT_EQ(first["event"], "finding");
  EXPECT_EQ(first["rule"], "LossNotDecreasing");
  EXPECT_EQ(first["step"], 10);
  auto second = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(second["event"], "status");
  EXPECT_GT(second["time_us"].get<int64_t>(), 0) << "stamped";
  auto third = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(third["event"], "action");
  EXPECT_EQ(third["result"], "failed");
  EXPECT_EQ(third["time"], "2026-11-21T10:00:01.000000Z");

  uint64_t offset = 0;
  std::vector<LoggedEvent> events;
  ASSERT_TRUE(ReadEvents(nullptr, (*log)->path(), &offset, &events).ok());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event, "finding");
  ASSERT_TRUE(events[0].finding.has_value());
  EXPECT_EQ(events[0].finding->value, 7.5);
  EXPECT_EQ(events[1].finding->kind, FindingKind::kStatusChange);
  ASSERT_TRUE(events[2].action.has_value());
  EXPECT_EQ(events[2].action->attempts, 4);
  EXPECT_EQ(events[2].action->result, ActionResult::kFailed);
  EXPECT_EQ(events[2].action->detail, "HTTP 503");

  // Reading on from the offset sees only what is new.
  ASSERT_TRUE((*log)->LogFinding(MakeFinding("Overfit", 11)).ok());
  events.clear();
  ASSERT_TRUE(ReadEvents(nullptr, (*log)->path(), &offset, &events).ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].finding->rule, "Overfit");
}

// The runner's findings reach the actions as they are (no JSON round trip), with the keys only
// events.jsonl has; the event log writes the keys of event_log.md, no more.
TEST(EventLogTest, AFindingAsRulesMakeItIsLoggedWithTheEventLogsKeys) {
  TempDir trial;
  auto log = EventLog::Open(nullptr, trial.path());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  RuleFinding f = MakeFinding("StalledTrainingRule", 30);
  f.mode = Mode::kTrain;
  f.mode_step = 28;
  f.threshold = 5;
  f.condition = "no step for threshold seconds";
  f.recommendation = "look at the data loader";
  f.trial = trial.path();
  f.stop_training = true;
  ASSERT_TRUE((*log)->LogFinding(f).ok());
  auto lines = Lines((*log)->path());
  ASSERT_EQ(lines.size(), 1u);
  std::set<std::string> keys;
  const nlohmann::json line = nlohmann::json::parse(lines[0]);
  for (const auto& item : line.items()) keys.insert(item.key());
  EXPECT_EQ(keys, (std::set<std::string>{"v", "event", "kind", "rule", "status", "step", "mode",
                                         "tensor", "value", "threshold", "explanation",
                                         "recommendation", "time_us", "time"}));
}

TEST(EventLogTest, ReopeningAppends) {
  TempDir trial;
  {
    auto log = EventLog::Open(nullptr, trial.path());
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->LogFinding(MakeFinding("A", 1)).ok());
  }
  auto log = EventLog::Open(nullptr, trial.path());
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->LogFinding(MakeFinding("B", 2)).ok());
  EXPECT_EQ(Lines(EventLog::PathFor(trial.path())).size(), 2u);
}

TEST(EventLogTest, ReaderLeavesAPartialLastLineForLater) {
  TempDir trial;
  const std::string path = EventLog::PathFor(trial.path());
  auto log = EventLog::Open(nullptr, trial.path());
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->LogFinding(MakeFinding("A", 1)).ok());
  const std::string half = R"({"v":1,"event":"finding","rule":"B","sta)";
  std::ofstream(path, std::ios::app) << half;
  uint64_t offset = 0;
  std::vector<LoggedEvent> events;
  ASSERT_TRUE(ReadEvents(nullptr, path, &offset, &events).ok());
  EXPECT_EQ(events.size(), 1u);
  const uint64_t after_first = offset;
  std::ofstream(path, std::ios::app) << "tus\":\"Error\"}\n";
  ASSERT_TRUE(ReadEvents(nullptr, path, &offset, &events).ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].finding->status, RuleEvaluationStatus::kError);
  EXPECT_GT(offset, after_first);
}

TEST(EventLogTest, CorruptLineIsReportedWithItsOffset) {
  TempDir trial;
  const std::string path = trial.path() + "/log.jsonl";
  std::ofstream(path) << "{\"v\":1,\"event\":\"status\",\"rule\":\"R\",\"status\":\"Error\"}\n"
                      << "not json\n";
  uint64_t offset = 0;
  std::vector<LoggedEvent> events;
  Status s = ReadEvents(nullptr, path, &offset, &events);
  ASSERT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("at byte 53"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos);

  std::ofstream(path) << "{\"event\":\"action\",\"step\":\"x\",\"result\":\"done\"}\n";
  events.clear();
  offset = 0;
  EXPECT_EQ(ReadEvents(nullptr, path, &offset, &events).code(), StatusCode::kCorruption)
      << "a wrongly typed field is corruption, not a crash";

  std::ofstream(path) << "{\"event\":\"from_the_future\",\"time_us\":5}\n";
  events.clear();
  offset = 0;
  ASSERT_TRUE(ReadEvents(nullptr, path, &offset, &events).ok()) << "unknown kinds are kept";
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "from_the_future");
  EXPECT_EQ(events[0].time_micros, 5);
}

// Issue 17 (found by event_log_fuzz under UBSan): a float where an action's integer belongs
// (5e76 does not fit int64; json::value converted it, undefined behaviour) is corruption naming
// the byte offset; integers read as before.
TEST(EventLogTest, ActionNumbersThatAreNotIntegersAreCorruption) {
  auto env = NewMemEnv();
  const std::string path = "/t/log.jsonl";
  for (const char* bad :
       {"\"step\":5e76", "\"step\":1.5", "\"attempts\":1e300", "\"attempts\":-3"}) {
    ASSERT_TRUE(env->CreateDirs("/t").ok());
    ASSERT_TRUE(
        env->WriteFileAtomic(
               path, std::string("{\"event\":\"action\",\"result\":\"done\",") + bad + "}\n", false)
            .ok());
    uint64_t offset = 0;
    std::vector<LoggedEvent> events;
    Status s = ReadEvents(env.get(), path, &offset, &events);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << bad << ": " << s.ToString();
    EXPECT_NE(s.message().find("at byte 0"), std::string::npos) << s.ToString();
  }
  ASSERT_TRUE(
      env->WriteFileAtomic(
             path, "{\"event\":\"action\",\"result\":\"done\",\"step\":7,\"attempts\":2}\n", false)
          .ok());
  uint64_t offset = 0;
  std::vector<LoggedEvent> events;
  Status s = ReadEvents(env.get(), path, &offset, &events);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].action.has_value());
  EXPECT_EQ(events[0].action->step, 7);
  EXPECT_EQ(events[0].action->attempts, 2);
}

TEST(EventLogTest, FullDiskIsAnErrorNamingTheLog) {
  TempDir trial;
  FaultInjectionEnv faulty(Env::Default());
  auto log = EventLog::Open(&faulty, trial.path());
  ASSERT_TRUE(log.ok());
  faulty.SetDiskSpaceLeft(10);
  Status s = (*log)->LogFinding(MakeFinding("A", 1));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("events.log.jsonl"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("No space left"), std::string::npos) << s.ToString();
}

TEST(EventLogTest, WorksOnTheInMemoryEnv) {
  auto env = NewMemEnv();
  auto log = EventLog::Open(env.get(), "/t");
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->LogFinding(MakeFinding("A", 1)).ok());
  uint64_t offset = 0;
  std::vector<LoggedEvent> events;
  ASSERT_TRUE(ReadEvents(env.get(), "/t/rule-output/events.log.jsonl", &offset, &events).ok());
  ASSERT_EQ(events.size(), 1u);
}

TEST(EventLogTest, SeveralProcessesAppendWithoutInterleaving) {
  TempDir trial;
  constexpr int kProcs = 3, kLines = 300;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    if (pid == 0) {
      auto log = EventLog::Open(nullptr, trial.path());
      if (!log.ok()) ::_exit(1);
      for (int i = 0; i < kLines; ++i) {
        RuleFinding f = MakeFinding("Rule" + std::to_string(p), i);
        f.explanation = std::string(200 + i, 'x');  // long lines make tearing visible
        if (!(*log)->LogFinding(f).ok()) ::_exit(2);
      }
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  uint64_t offset = 0;
  std::vector<LoggedEvent> events;
  ASSERT_TRUE(ReadEvents(nullptr, EventLog::PathFor(trial.path()), &offset, &events).ok());
  ASSERT_EQ(events.size(), static_cast<size_t>(kProcs * kLines));
  std::set<std::pair<std::string, int64_t>> seen;
  for (const auto& e : events) {
    ASSERT_TRUE(e.finding.has_value());
    EXPECT_EQ(e.finding->explanation.size(), static_cast<size_t>(200 + e.finding->step));
    seen.insert({e.finding->rule, e.finding->step});
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kProcs * kLines));
}

}  // namespace
}  // namespace trainscope
