// WebhookNotifier against real HTTP servers on loopback (test_servers.py webhook), a listener
// that never answers, and a port nobody listens on.
#include "trainscope/webhook.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "actions/loopback.h"

namespace trainscope {
namespace {

using testing::PyServer;
using testing::SilentListener;
using namespace std::chrono_literals;

RuleFinding Sample(int64_t step = 400) {
  RuleFinding f;
  f.rule = "VanishingGradient";
  f.step = step;
  f.mode = Mode::kTrain;
  f.tensor = "gradients/fc1.weight";
  f.value = 1e-9;
  f.threshold = 1e-7;
  f.explanation = "mean |gradient| fell below the threshold";
  f.recommendation = "Use ReLU activations or batch normalisation.";
  f.time_micros = 1795255200000000;
  return f;
}

// Collects outcomes from the worker thread.
class Outcomes {
 public:
  OutcomeCallback Callback() {
    return [this](const ActionOutcome& o) {
      std::lock_guard<std::mutex> lock(mu_);
      all_.push_back(o);
    };
  }
  std::vector<ActionOutcome> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return all_;
  }

 private:
  std::mutex mu_;
  std::vector<ActionOutcome> all_;
};

WebhookOptions Fast(std::string url) {
  WebhookOptions o;
  o.url = std::move(url);
  o.initial_backoff = 10ms;
  o.max_backoff = 50ms;
  o.connect_timeout = 2000ms;
  o.request_timeout = 5000ms;
  return o;
}

TEST(WebhookTest, PostsTheFindingAsJsonWithSlackText) {
  PyServer server({"webhook"});
  ASSERT_GT(server.port(), 0) << PyServer::Help();
  Outcomes outcomes;
  WebhookOptions o = Fast(server.url("/hooks/training"));
  o.headers = {"Authorization: Bearer s3cret"};
  o.trial = "/data/run1";
  auto n = WebhookNotifier::Create(o, outcomes.Callback());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(10s));

  auto req = server.Next();
  ASSERT_TRUE(req.is_object());
  EXPECT_EQ(req["path"], "/hooks/training");
  EXPECT_EQ(req["headers"]["Content-Type"], "application/json");
  EXPECT_EQ(req["headers"]["Authorization"], "Bearer s3cret");
  auto body = nlohmann::json::parse(req["body"].get<std::string>());
  EXPECT_EQ(body["rule"], "VanishingGradient");
  EXPECT_EQ(body["status"], "IssuesFound");
  EXPECT_EQ(body["step"], 400);
  EXPECT_EQ(body["tensor"], "gradients/fc1.weight");
  EXPECT_EQ(body["trial"], "/data/run1");
  EXPECT_EQ(body["source"], "trainscope");
  const std::string text = body["text"];
  EXPECT_NE(text.find("VanishingGradient: IssuesFound at step 400"), std::string::npos) << text;
  EXPECT_NE(text.find("Recommendation: Use ReLU"), std::string::npos) << text;

  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].action, "webhook");
  EXPECT_EQ(got[0].result, ActionResult::kDone);
  EXPECT_EQ(got[0].attempts, 1);
  EXPECT_EQ(got[0].detail, "HTTP 200");
  EXPECT_EQ(got[0].rule, "VanishingGradient");
  EXPECT_EQ((*n)->delivered(), 1u);
}

// A finding as the rules make it carries keys only events.jsonl has; the payload keeps the
// event log's finding keys, and "trial" is the webhook's own.
TEST(WebhookTest, PayloadOfAFindingAsRulesMakeItHasTheActionsKeys) {
  RuleFinding f = Sample();
  f.mode_step = 396;
  f.condition = "mean(|gradient|) < threshold";
  f.trial = "/the/rules/trial";
  f.stop_training = true;
  auto body = nlohmann::json::parse(WebhookNotifier::Payload(f, "/data/run1"));
  EXPECT_EQ(body["trial"], "/data/run1");
  for (const char* key : {"mode_step", "condition", "stop_training"}) {
    EXPECT_FALSE(body.contains(key)) << key;
  }
  EXPECT_FALSE(nlohmann::json::parse(WebhookNotifier::Payload(f, "")).contains("trial"));
}

TEST(WebhookTest, RetriesServerErrorsWithBackoff) {
  PyServer server({"webhook", "--fail-first", "2"});
  ASSERT_GT(server.port(), 0) << PyServer::Help();
  Outcomes outcomes;
  auto n = WebhookNotifier::Create(Fast(server.url("/h")), outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(20s));
  EXPECT_EQ(server.Next()["answered"], 500);
  EXPECT_EQ(server.Next()["answered"], 500);
  auto third = server.Next();
  EXPECT_EQ(third["answered"], 200);
  EXPECT_EQ(nlohmann::json::parse(third["body"].get<std::string>())["step"], 400)
      << "the retry carries the same body";
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kDone);
  EXPECT_EQ(got[0].attempts, 3);
}

TEST(WebhookTest, GivesUpAfterMaxAttemptsOnPersistent5xx) {
  PyServer server({"webhook", "--fail-first", "100"});
  ASSERT_GT(server.port(), 0) << PyServer::Help();
  Outcomes outcomes;
  WebhookOptions o = Fast(server.url("/h"));
  o.max_attempts = 3;
  auto n = WebhookNotifier::Create(o, outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(20s));
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kFailed);
  EXPECT_EQ(got[0].attempts, 3);
  EXPECT_NE(got[0].detail.find("HTTP 500: try later"), std::string::npos) << got[0].detail;
  EXPECT_NE(got[0].detail.find("gave up after 3 attempts"), std::string::npos) << got[0].detail;
  EXPECT_EQ((*n)->failed(), 1u);
}

TEST(WebhookTest, ClientErrorsAreNotRetried) {
  PyServer server({"webhook", "--status", "404"});
  ASSERT_GT(server.port(), 0) << PyServer::Help();
  Outcomes outcomes;
  auto n = WebhookNotifier::Create(Fast(server.url("/missing")), outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(10s));
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kFailed);
  EXPECT_EQ(got[0].attempts, 1);
  EXPECT_NE(got[0].detail.find("HTTP 404"), std::string::npos) << got[0].detail;
  EXPECT_NE(got[0].detail.find("not retried"), std::string::npos) << got[0].detail;
}

TEST(WebhookTest, ServerThatNeverAnswersTimesOutWithoutBlockingTheCaller) {
  SilentListener silent;
  ASSERT_GT(silent.port(), 0);
  Outcomes outcomes;
  WebhookOptions o = Fast("http://127.0.0.1:" + std::to_string(silent.port()) + "/h");
  o.request_timeout = 300ms;
  o.max_attempts = 2;
  auto n = WebhookNotifier::Create(o, outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  // Had Notify waited for the server, the outcome would already be known.
  EXPECT_TRUE(outcomes.Get().empty());
  ASSERT_TRUE((*n)->Flush(20s));
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kFailed);
  EXPECT_EQ(got[0].attempts, 2) << "a timeout is retried";
  EXPECT_NE(got[0].detail.find("Timeout"), std::string::npos) << got[0].detail;
}

TEST(WebhookTest, ConnectionRefusedIsRetriedThenFails) {
  Outcomes outcomes;
  WebhookOptions o = Fast("http://127.0.0.1:" + std::to_string(testing::RefusedPort()) + "/h");
  o.max_attempts = 3;
  auto n = WebhookNotifier::Create(o, outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(20s));
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kFailed);
  EXPECT_EQ(got[0].attempts, 3);
  EXPECT_NE(got[0].detail.find("connect"), std::string::npos) << got[0].detail;
}

TEST(WebhookTest, FullQueueDropsAndCounts) {
  SilentListener silent;
  Outcomes outcomes;
  WebhookOptions o = Fast("http://127.0.0.1:" + std::to_string(silent.port()) + "/h");
  o.queue_capacity = 2;
  o.request_timeout = 60000ms;  // the first request stays in flight for the whole test
  auto n = WebhookNotifier::Create(o, outcomes.Callback());
  ASSERT_TRUE(n.ok());
  int refused = 0;
  for (int i = 0; i < 6; ++i) {
    Status s = (*n)->Notify(Sample(i));
    if (!s.ok()) {
      ++refused;
      EXPECT_EQ(s.code(), StatusCode::kUnavailable);
      EXPECT_NE(s.message().find("queue full (2 pending)"), std::string::npos) << s.ToString();
    }
  }
  // At most one in flight plus two queued were accepted.
  EXPECT_GE(refused, 3);
  EXPECT_LE(refused, 4);
  EXPECT_EQ((*n)->dropped(), static_cast<uint64_t>(refused));
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), static_cast<size_t>(refused));
  for (const auto& oc : got) EXPECT_EQ(oc.result, ActionResult::kDropped);
  // Closing cancels the request in flight (it would otherwise wait 60 s) and drops the rest.
  (*n)->Close(0ms);
  got = outcomes.Get();
  EXPECT_EQ(got.size(), 6u);
  EXPECT_EQ((*n)->failed() + (*n)->dropped(), 6u);
}

TEST(WebhookTest, CloseDrainsTheQueue) {
  PyServer server({"webhook"});
  ASSERT_GT(server.port(), 0) << PyServer::Help();
  auto n = WebhookNotifier::Create(Fast(server.url("/h")));
  ASSERT_TRUE(n.ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*n)->Notify(Sample(i)).ok());
  (*n)->Close(20s);
  EXPECT_EQ((*n)->delivered(), 5u);
  for (int i = 0; i < 5; ++i) {
    auto req = server.Next();
    ASSERT_TRUE(req.is_object());
    EXPECT_EQ(nlohmann::json::parse(req["body"].get<std::string>())["step"], i) << "in order";
  }
  EXPECT_EQ((*n)->Notify(Sample()).code(), StatusCode::kUnavailable) << "closed";
}

TEST(WebhookTest, RejectsBadOptions) {
  for (const char* url : {"", "ftp://x/y", "http://", "127.0.0.1:80/hook", "http://a b/"}) {
    auto n = WebhookNotifier::Create(Fast(url));
    ASSERT_FALSE(n.ok()) << url;
    EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(n.status().message().find("url"), std::string::npos);
  }
  WebhookOptions o = Fast("http://127.0.0.1:1/h");
  o.headers = {"NoColonHere"};
  EXPECT_FALSE(WebhookNotifier::Create(o).ok());
  o.headers = {};
  o.queue_capacity = 0;
  EXPECT_FALSE(WebhookNotifier::Create(o).ok());
}

TEST(WebhookTest, TargetRedactsCredentials) {
  auto n = WebhookNotifier::Create(Fast("https://user:pw@hooks.example.com/x?y=1"));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ((*n)->target(), "https://***@hooks.example.com/x?y=1");
}

}  // namespace
}  // namespace trainscope
