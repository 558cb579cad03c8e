// EmailNotifier against a real SMTP server on loopback (aiosmtpd, test_servers.py smtp); the
// messages are decoded by Python's email package, an independent reader of what we send.
#include "trainscope/email.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "actions/loopback.h"

namespace trainscope {
namespace {

using testing::PyServer;
using namespace std::chrono_literals;

RuleFinding Sample() {
  RuleFinding f;
  f.rule = "ExplodingTensor";
  f.step = 1200;
  f.mode = Mode::kTrain;
  f.tensor = "CrossEntropyLoss_output_0";
  f.value = std::numeric_limits<double>::quiet_NaN();
  f.explanation = "the loss became NaN";
  f.recommendation =
      "Lower the learning rate (e.g. by 10x), clip gradients, and check the input data for "
      "NaN or inf values before they reach the model.";
  f.time_micros = 1795255200000000;
  return f;
}

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

EmailOptions Options(int port) {
  EmailOptions o;
  o.smtp_url = "smtp://127.0.0.1:" + std::to_string(port);
  o.from = "trainscope@example.com";
  o.to = {"alice@example.com", "bob@example.org"};
  o.trial = "/data/run7";
  o.initial_backoff = 10ms;
  o.max_backoff = 50ms;
  return o;
}

TEST(EmailTest, DeliversAReadablePlainTextMessage) {
  PyServer sink({"smtp"});
  ASSERT_GT(sink.port(), 0) << PyServer::Help();
  Outcomes outcomes;
  auto n = EmailNotifier::Create(Options(sink.port()), outcomes.Callback());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(20s));

  auto m = sink.Next();
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["mail_from"], "trainscope@example.com");
  EXPECT_EQ(m["rcpt_tos"], nlohmann::json::array({"alice@example.com", "bob@example.org"}));
  EXPECT_EQ(m["from"], "trainscope@example.com");
  EXPECT_EQ(m["to"], "alice@example.com, bob@example.org");
  EXPECT_EQ(m["subject"], "[trainscope] ExplodingTensor: IssuesFound at step 1200");
  EXPECT_EQ(m["content_type"], "text/plain");
  const std::string body = m["body"];
  EXPECT_NE(body.find("What was found:\n  the loss became NaN"), std::string::npos) << body;
  EXPECT_NE(body.find("What to do:\n  Lower the learning rate"), std::string::npos) << body;
  EXPECT_NE(body.find("inf values before they reach the model."), std::string::npos) << body;
  EXPECT_NE(body.find("Step:      1200 (TRAIN)"), std::string::npos) << body;
  EXPECT_NE(body.find("Value:     NaN"), std::string::npos) << body;
  EXPECT_NE(body.find("Trial:     /data/run7"), std::string::npos) << body;
  for (size_t start = 0, nl; (nl = body.find('\n', start)) != std::string::npos; start = nl + 1) {
    EXPECT_LE(nl - start, 78u) << "wrapped: " << body.substr(start, nl - start);
  }

  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].action, "email");
  EXPECT_EQ(got[0].result, ActionResult::kDone);
  EXPECT_EQ(got[0].attempts, 1);
  EXPECT_EQ(got[0].target, "alice@example.com, bob@example.org via smtp://127.0.0.1:" +
                               std::to_string(sink.port()));
}

TEST(EmailTest, NonAsciiSubjectAndDotLinesArriveIntact) {
  PyServer sink({"smtp"});
  ASSERT_GT(sink.port(), 0) << PyServer::Help();
  auto n = EmailNotifier::Create(Options(sink.port()));
  ASSERT_TRUE(n.ok());
  RuleFinding f = Sample();
  f.rule = "Règle_Été";
  f.explanation = "first line\n.\n..two dots\nlast line";
  ASSERT_TRUE((*n)->Notify(f).ok());
  ASSERT_TRUE((*n)->Flush(20s));
  auto m = sink.Next();
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["subject"], "[trainscope] Règle_Été: IssuesFound at step 1200");
  EXPECT_NE(m["raw"].get<std::string>().find("=?UTF-8?B?"), std::string::npos);
  const std::string body = m["body"];
  EXPECT_NE(body.find("  first line\n  .\n  ..two dots\n  last line"), std::string::npos) << body;
}

TEST(EmailTest, TemporaryRejectionIsRetried) {
  PyServer sink({"smtp", "--tempfail-first", "1"});
  ASSERT_GT(sink.port(), 0) << PyServer::Help();
  Outcomes outcomes;
  auto n = EmailNotifier::Create(Options(sink.port()), outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(20s));
  EXPECT_EQ(sink.Next()["tempfailed"], true);
  EXPECT_EQ(sink.Next()["subject"], "[trainscope] ExplodingTensor: IssuesFound at step 1200");
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kDone);
  EXPECT_EQ(got[0].attempts, 2);
}

TEST(EmailTest, PermanentRejectionIsNotRetried) {
  PyServer sink({"smtp", "--reject", "bob@example.org"});
  ASSERT_GT(sink.port(), 0) << PyServer::Help();
  Outcomes outcomes;
  EmailOptions o = Options(sink.port());
  o.to = {"bob@example.org"};
  auto n = EmailNotifier::Create(o, outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(20s));
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kFailed);
  EXPECT_EQ(got[0].attempts, 1);
  EXPECT_NE(got[0].detail.find("550"), std::string::npos) << got[0].detail;
}

TEST(EmailTest, LogsInWhenTheServerRequiresIt) {
  PyServer sink({"smtp", "--auth", "mailer:hunter2"});
  ASSERT_GT(sink.port(), 0) << PyServer::Help();
  Outcomes good_outcomes, bad_outcomes;
  EmailOptions good = Options(sink.port());
  good.username = "mailer";
  good.password = "hunter2";
  auto n = EmailNotifier::Create(good, good_outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(20s));
  EXPECT_EQ(sink.Next()["mail_from"], "trainscope@example.com");
  ASSERT_EQ(good_outcomes.Get().size(), 1u);
  EXPECT_EQ(good_outcomes.Get()[0].result, ActionResult::kDone);

  EmailOptions bad = good;
  bad.password = "wrong";
  auto b = EmailNotifier::Create(bad, bad_outcomes.Callback());
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*b)->Notify(Sample()).ok());
  ASSERT_TRUE((*b)->Flush(20s));
  auto got = bad_outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kFailed);
  EXPECT_EQ(got[0].attempts, 1) << "a refused login is permanent: " << got[0].detail;
}

TEST(EmailTest, UnreachableServerFailsAfterRetries) {
  Outcomes outcomes;
  EmailOptions o = Options(testing::RefusedPort());
  o.max_attempts = 2;
  auto n = EmailNotifier::Create(o, outcomes.Callback());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Notify(Sample()).ok());
  ASSERT_TRUE((*n)->Flush(20s));
  auto got = outcomes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].result, ActionResult::kFailed);
  EXPECT_EQ(got[0].attempts, 2);
}

TEST(EmailTest, RejectsBadOptions) {
  EmailOptions o = Options(25);
  o.smtp_url = "http://127.0.0.1:25";
  EXPECT_NE(EmailNotifier::Create(o).status().message().find("smtp url"), std::string::npos);
  o = Options(25);
  o.to = {};
  EXPECT_NE(EmailNotifier::Create(o).status().message().find("recipient"), std::string::npos);
  o.to = {"not-an-address"};
  EXPECT_NE(EmailNotifier::Create(o).status().message().find("not-an-address"), std::string::npos);
  o.to = {"a@b.c\r\nBcc: evil@x.y"};
  EXPECT_FALSE(EmailNotifier::Create(o).ok()) << "no header injection through an address";
  o = Options(25);
  o.from = "";
  auto n = EmailNotifier::Create(o);
  ASSERT_TRUE(n.ok()) << "an empty From defaults to trainscope@<host>";
}

TEST(EmailTest, FormatMessageHeaders) {
  EmailOptions o = Options(25);
  RuleFinding f = Sample();
  f.rule = "Evil\r\nBcc: x@y.z";
  std::string m = EmailNotifier::FormatMessage(o, f, 1795255200000000);
  EXPECT_NE(m.find("Date: Sat, 21 Nov 2026 10:00:00 +0000\r\n"), std::string::npos) << m;
  EXPECT_NE(m.find("MIME-Version: 1.0\r\n"), std::string::npos);
  EXPECT_NE(m.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos);
  const size_t header_end = m.find("\r\n\r\n");
  ASSERT_NE(header_end, std::string::npos) << "headers end with a blank line";
  const std::string headers = m.substr(0, header_end + 2);
  EXPECT_EQ(headers.find("\r\nBcc:"), std::string::npos) << "CR/LF in a header are neutralised";
  EXPECT_NE(headers.find("X-Trainscope-Rule: Evil  Bcc: x@y.z\r\n"), std::string::npos) << headers;
}

}  // namespace
}  // namespace trainscope
