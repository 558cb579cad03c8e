#include "trainscope/action_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "actions/loopback.h"
#include "trainscope/stop_signal.h"

namespace trainscope {
namespace {

using testing::PyServer;
using testing::TempDir;
using namespace std::chrono_literals;

RuleFinding MakeFinding(std::string rule, int64_t step) {
  RuleFinding f;
  f.rule = std::move(rule);
  f.step = step;
  f.explanation = "the condition was met";
  f.recommendation = "do something sensible";
  return f;
}

std::string Opt(const ActionSpec& spec, const std::string& key) {
  for (const auto& [k, v] : spec.options) {
    if (k == key) return v;
  }
  return "(absent)";
}

TEST(ActionSpecTest, ParsesTheStringForm) {
  auto specs = ParseActionSpecs(
      " stop ; webhook:url=http://127.0.0.1:8080/hook?x=1,retries=2 ;"
      "email:to=a@b.c,to=d@e.f,smtp=smtp://127.0.0.1:2525,on=all");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->size(), 3u);
  EXPECT_EQ((*specs)[0].kind, "stop");
  EXPECT_TRUE((*specs)[0].options.empty());
  EXPECT_EQ((*specs)[1].kind, "webhook");
  EXPECT_EQ(Opt((*specs)[1], "url"), "http://127.0.0.1:8080/hook?x=1");
  EXPECT_EQ(Opt((*specs)[1], "retries"), "2");
  EXPECT_EQ((*specs)[2].kind, "email");
  ASSERT_EQ((*specs)[2].options.size(), 4u);
  EXPECT_EQ((*specs)[2].options[0], std::make_pair(std::string("to"), std::string("a@b.c")));
  EXPECT_EQ((*specs)[2].options[1], std::make_pair(std::string("to"), std::string("d@e.f")));
  EXPECT_EQ(Opt((*specs)[2], "on"), "all");

  auto empty = ParseActionSpecs("  ");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(ParseActionSpecs("StopTraining")->at(0).kind, "stop");
}

TEST(ActionSpecTest, ParsesSmdebugActionJson) {
  auto one = ParseActionSpecs(R"({"name": "StopTraining", "training_job_prefix": "job-1"})");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].kind, "stop");
  EXPECT_TRUE((*one)[0].options.empty()) << "training_job_prefix is accepted and ignored";

  auto list = ParseActionSpecs(
      R"([{"name":"stoptraining","training_job_prefix":"j"},
          {"name":"Email","endpoint":"ops@example.com","smtp":"smtp://127.0.0.1:25"},
          {"name":"webhook","url":"http://127.0.0.1:1/h","retries":3,"header":["A: b","C: d"]}])");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[1].kind, "email");
  EXPECT_EQ(Opt((*list)[1], "to"), "ops@example.com");
  EXPECT_EQ(Opt((*list)[1], "smtp"), "smtp://127.0.0.1:25");
  EXPECT_EQ(Opt((*list)[2], "retries"), "3");
  int headers = 0;
  for (const auto& [k, v] : (*list)[2].options) headers += k == "header";
  EXPECT_EQ(headers, 2);
}

TEST(ActionSpecTest, SmsIsRefusedWithAnExplanation) {
  for (const char* spec :
       {R"({"name": "sms", "endpoint": "+15555550100"})", "sms:to=+1555", "stop;SMS"}) {
    auto r = ParseActionSpecs(spec);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_EQ(r.status().code(), StatusCode::kNotSupported);
    EXPECT_NE(r.status().message().find("not supported"), std::string::npos);
    EXPECT_NE(r.status().message().find("email"), std::string::npos) << "suggests an alternative";
  }
}

TEST(ActionSpecTest, ErrorsNameThePartAndListTheValidForms) {
  struct Case {
    const char* spec;
    const char* names;  // the error must contain this
  };
  for (const Case& c : std::vector<Case>{
           {"stop;webhok:url=http://x/",
            "action 2 \"webhok:url=http://x/\": unknown action \"webhok\""},
           {"webhook:url", "option \"url\" is not KEY=VALUE"},
           {"webhook:uri=http://x/", "unknown option \"uri\" for webhook"},
           {"stop:url=http://x/", "unknown option \"url\" for stop"},
           {"email:to=a@b.c,smtp=smtp://h,colour=red", "unknown option \"colour\""},
           {R"({"name": "page_me"})", "unknown action \"page_me\""},
           {R"({"endpoint": "a@b.c"})", "missing \"name\""},
           {R"([1, 2])", "each action must be a JSON object"},
           {R"({"name": "stop")", "not valid JSON"},
           {R"({"name": "webhook", "url": {"nested": 1}})", "key \"url\" must be a string"},
       }) {
    auto r = ParseActionSpecs(c.spec);
    ASSERT_FALSE(r.ok()) << c.spec;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(r.status().message().find(c.names), std::string::npos) << c.spec << "\n"
                                                                     << r.status().message();
    EXPECT_NE(r.status().message().find("webhook:url=http(s)://HOST"), std::string::npos)
        << "lists the valid forms: " << r.status().message();
  }
}

TEST(ActionSetTest, BadValuesAreReportedWhenBuilding) {
  TempDir trial;
  ActionContext ctx;
  ctx.trial_dir = trial.path();
  struct Case {
    const char* spec;
    const char* names;
  };
  for (const Case& c : std::vector<Case>{
           {"webhook:url=ftp://x/", "is not http://"},
           {"webhook:retries=2", "webhook needs url="},
           {"webhook:url=http://x/,timeout_ms=soon", "timeout_ms=\"soon\" must be an integer"},
           {"webhook:url=http://x/,queue=0", "queue=\"0\" must be an integer >= 1"},
           {"email:to=a@b.c", "needs an SMTP server"},
           {"email:to=nobody,smtp=smtp://127.0.0.1:25", "\"nobody\" is not an address"},
           {"email:to=a@b.c,smtp=smtp://h:25,starttls=maybe", "true or false"},
           {"email:to=a@b.c,smtp=smtp://h:25,user=u,password_env=TS_TEST_NO_SUCH_VAR",
            "TS_TEST_NO_SUCH_VAR"},
           {"stop,on=sometimes", "unknown action"},
           {"stop:on=sometimes", "findings or all"},
           {"stop:min_interval_s=-1", "seconds >= 0"},
       }) {
    auto set = ActionSet::Create(c.spec, ctx);
    ASSERT_FALSE(set.ok()) << c.spec;
    EXPECT_NE(set.status().message().find(c.names), std::string::npos) << c.spec << "\n"
                                                                       << set.status().message();
  }
  ActionContext no_trial;
  auto set = ActionSet::Create("stop", no_trial);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("trial folder"), std::string::npos);
}

TEST(ActionSetTest, SmtpServerMayComeFromTheEnvironment) {
  ::setenv("TRAINSCOPE_SMTP_URL", "smtp://127.0.0.1:2525", 1);
  auto set = ActionSet::Create(R"({"name":"email","endpoint":"ops@example.com"})", {});
  ::unsetenv("TRAINSCOPE_SMTP_URL");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ((*set)->Describe().size(), 1u);
  EXPECT_EQ((*set)->Describe()[0], "email ops@example.com via smtp://127.0.0.1:2525");
}

// The whole path: a finding dispatched to stop + webhook, recorded in the event log and metrics.
TEST(ActionSetTest, DispatchActsLogsAndCounts) {
  PyServer hook({"webhook"});
  ASSERT_GT(hook.port(), 0) << PyServer::Help();
  TempDir trial;
  auto log = EventLog::Open(nullptr, trial.path());
  ASSERT_TRUE(log.ok());
  PrometheusExporter metrics(trial.path());
  ActionContext ctx;
  ctx.trial_dir = trial.path();
  ctx.event_log = log->get();
  ctx.metrics = &metrics;
  auto set = ActionSet::Create("stop;webhook:url=" + hook.url("/h") + ",backoff_ms=10", ctx);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ((*set)->size(), 2u);

  ASSERT_TRUE(
      (*set)
          ->Dispatch(RuleFinding::StatusChange("Overfit", RuleEvaluationStatus::kInProgress))
          .ok());
  EXPECT_FALSE(StopSignal::Check(trial.path())) << "status changes trigger nothing by default";
  ASSERT_TRUE((*set)->Dispatch(MakeFinding("ExplodingTensor", 42)).ok());
  ASSERT_TRUE((*set)->Flush(20s));

  StopSignal signal(trial.path());
  ASSERT_TRUE(signal.Check());
  EXPECT_EQ(signal.Read()->rule, "ExplodingTensor");
  auto req = hook.Next();
  ASSERT_TRUE(req.is_object());
  EXPECT_EQ(nlohmann::json::parse(req["body"].get<std::string>())["trial"], trial.path());

  uint64_t offset = 0;
  std::vector<LoggedEvent> events;
  ASSERT_TRUE(ReadEvents(nullptr, (*log)->path(), &offset, &events).ok());
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].event, "status");
  EXPECT_EQ(events[1].event, "finding");
  EXPECT_GT(events[1].finding->time_micros, 0) << "stamped at dispatch";
  std::set<std::string> acted;
  for (size_t i = 2; i < 4; ++i) {
    ASSERT_TRUE(events[i].action.has_value());
    EXPECT_EQ(events[i].action->result, ActionResult::kDone) << events[i].action->detail;
    acted.insert(events[i].action->action);
  }
  EXPECT_EQ(acted, (std::set<std::string>{"stop", "webhook"}));

  const std::string text = metrics.Render();
  EXPECT_NE(text.find("trainscope_rule_findings_total{rule=\"ExplodingTensor\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("trainscope_actions_total{action=\"webhook\",result=\"done\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("trainscope_stop_requested 1\n"), std::string::npos);
  EXPECT_NE(text.find("trainscope_rule_status{rule=\"Overfit\",status=\"InProgress\"} 1\n"),
            std::string::npos);
}

TEST(ActionSetTest, MinIntervalSuppressesRepeatsPerRuleAndOnAllSendsStatusChanges) {
  PyServer hook({"webhook"});
  ASSERT_GT(hook.port(), 0) << PyServer::Help();
  TempDir trial;
  auto log = EventLog::Open(nullptr, trial.path());
  ASSERT_TRUE(log.ok());
  ActionContext ctx;
  ctx.trial_dir = trial.path();
  ctx.event_log = log->get();
  auto set =
      ActionSet::Create("webhook:url=" + hook.url("/h") + ",min_interval_s=3600,on=all", ctx);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_TRUE((*set)->Dispatch(MakeFinding("A", 1)).ok());
  ASSERT_TRUE((*set)->Dispatch(MakeFinding("A", 2)).ok());  // within the hour: suppressed
  ASSERT_TRUE((*set)->Dispatch(MakeFinding("B", 3)).ok());  // another rule: sent
  ASSERT_TRUE(
      (*set)->Dispatch(RuleFinding::StatusChange("A", RuleEvaluationStatus::kStopped)).ok());
  ASSERT_TRUE((*set)->Flush(20s));

  std::vector<std::string> bodies;
  for (int i = 0; i < 3; ++i) {
    auto req = hook.Next();
    ASSERT_TRUE(req.is_object());
    auto body = nlohmann::json::parse(req["body"].get<std::string>());
    bodies.push_back(body["rule"].get<std::string>() + "/" + body["kind"].get<std::string>());
  }
  std::sort(bodies.begin(), bodies.end());
  EXPECT_EQ(bodies, (std::vector<std::string>{"A/finding", "A/status", "B/finding"}));

  uint64_t offset = 0;
  std::vector<LoggedEvent> events;
  ASSERT_TRUE(ReadEvents(nullptr, (*log)->path(), &offset, &events).ok());
  int suppressed = 0;
  for (const auto& e : events) {
    if (e.action && e.action->result == ActionResult::kSuppressed) {
      ++suppressed;
      EXPECT_EQ(e.action->step, 2);
    }
  }
  EXPECT_EQ(suppressed, 1);
}

TEST(ActionSetTest, EmptySpecStillRecordsFindings) {
  TempDir trial;
  PrometheusExporter metrics;
  ActionContext ctx;
  ctx.metrics = &metrics;
  auto set = ActionSet::Create("", ctx);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ((*set)->size(), 0u);
  ASSERT_TRUE((*set)->Dispatch(MakeFinding("R", 5)).ok());
  EXPECT_NE(metrics.Render().find("trainscope_rule_findings_total{rule=\"R\"} 1\n"),
            std::string::npos);
}

TEST(ActionSetTest, DroppedNotificationIsReportedButOtherActionsStillRun) {
  testing::SilentListener silent;
  TempDir trial;
  ActionContext ctx;
  ctx.trial_dir = trial.path();
  auto set = ActionSet::Create("webhook:url=http://127.0.0.1:" + std::to_string(silent.port()) +
                                   "/h,queue=1,timeout_ms=60000;stop",
                               ctx);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  // At most one request in flight (never answered) and one queued: 2 of 4 at least are dropped.
  int unavailable = 0;
  for (int i = 0; i < 4; ++i) {
    Status s = (*set)->Dispatch(MakeFinding("R", i));
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
      ++unavailable;
    }
  }
  EXPECT_GE(unavailable, 2) << "the full webhook queue is reported";
  EXPECT_TRUE(StopSignal::Check(trial.path())) << "and the stop action ran all the same";
  (*set)->Close(0ms);
  EXPECT_EQ((*set)->size(), 0u);
}

}  // namespace
}  // namespace trainscope
