// MetricsFeed on real trial files: findings appended to a rule's events.jsonl (a line still
// being written is counted once whole), action outcomes from the event log, and the training's
// last step and loss from a trial written by the store's writer.
#include "trainscope/metrics_feed.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "store/trial_test_util.h"
#include "trainscope/event_log.h"
#include "trainscope/writer.h"

namespace trainscope {
namespace {

using testing::TempDir;

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

std::string FindingLine(const std::string& rule, int64_t step) {
  RuleFinding f;
  f.rule = rule;
  f.step = step;
  f.explanation = "seen at " + std::to_string(step);
  return RuleFindingToJson(f) + "\n";
}

void Append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text;
}

TEST(MetricsFeedTest, CountsWholeFindingLinesOnce) {
  TempDir trial;
  const std::string dir = trial.path() + "/rule-output/VanishingGradient";
  ASSERT_TRUE(Env::Default()->CreateDirs(dir).ok());
  const std::string events = dir + "/events.jsonl";
  const std::string third = FindingLine("VanishingGradient", 30);
  Append(events, FindingLine("VanishingGradient", 10) + FindingLine("VanishingGradient", 20) +
                     third.substr(0, 15));  // the third is still being written
  PrometheusExporter metrics(trial.path());
  MetricsFeed feed(&metrics, trial.path());
  const std::map<std::string, std::optional<RuleEvaluationStatus>> rules = {
      {"VanishingGradient", RuleEvaluationStatus::kIssuesFound}, {"Unreadable", std::nullopt}};
  feed.Poll(rules);
  std::string text = metrics.Render();
  EXPECT_TRUE(Has(text, "trainscope_rule_findings_total{rule=\"VanishingGradient\"} 2")) << text;
  EXPECT_TRUE(Has(text, "trainscope_rule_last_finding_step{rule=\"VanishingGradient\"} 20"));
  EXPECT_TRUE(
      Has(text, "trainscope_rule_status{rule=\"VanishingGradient\",status=\"IssuesFound\"} 1"));
  // A rule whose status cannot be read gets no status of its own.
  EXPECT_EQ(text.find("rule=\"Unreadable\""), std::string::npos);

  feed.Poll(rules);  // nothing new: nothing counted twice
  EXPECT_TRUE(
      Has(metrics.Render(), "trainscope_rule_findings_total{rule=\"VanishingGradient\"} 2"));
  Append(events, third.substr(15));
  feed.Poll(rules);
  text = metrics.Render();
  EXPECT_TRUE(Has(text, "trainscope_rule_findings_total{rule=\"VanishingGradient\"} 3")) << text;
  EXPECT_TRUE(Has(text, "trainscope_rule_last_finding_step{rule=\"VanishingGradient\"} 30"));
}

TEST(MetricsFeedTest, CountsActionOutcomesFromTheEventLog) {
  TempDir trial;
  PrometheusExporter metrics(trial.path());
  MetricsFeed feed(&metrics, trial.path());
  feed.Poll({});  // no event log yet: nothing, no error
  {
    auto log = EventLog::Open(Env::Default(), trial.path());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ActionOutcome o;
    o.action = "webhook";
    o.target = "http://127.0.0.1:9/hook";
    o.rule = "LossNotDecreasing";
    o.step = 40;
    ASSERT_TRUE((*log)->LogAction(o).ok());
    o.result = ActionResult::kFailed;
    ASSERT_TRUE((*log)->LogAction(o).ok());
    ASSERT_TRUE((*log)->LogAction(o).ok());
  }
  feed.Poll({});
  const std::string text = metrics.Render();
  EXPECT_TRUE(Has(text, "trainscope_actions_total{action=\"webhook\",result=\"done\"} 1")) << text;
  EXPECT_TRUE(Has(text, "trainscope_actions_total{action=\"webhook\",result=\"failed\"} 2"));
}

TEST(MetricsFeedTest, FollowsTheTrialsLastStepAndLoss) {
  TempDir trial;
  PrometheusExporter metrics(trial.path());
  MetricsFeed feed(&metrics, trial.path());
  feed.Poll({});  // no trial yet
  EXPECT_TRUE(Has(metrics.Render(), "trainscope_loss_step -1"));
  auto w = testing::OpenWriter(Env::Default(), trial.path());
  ASSERT_NE(w, nullptr);
  for (int64_t s = 0; s < 3; ++s) {
    std::vector<float> loss = {2.0f - static_cast<float>(s) * 0.5f, 2.0f};
    ASSERT_TRUE(w->BeginStep(s, Mode::kTrain, s).ok());
    ASSERT_TRUE(w->AddTensor("loss", testing::FloatView(loss)).ok());
    ASSERT_TRUE(w->EndStep().ok());
  }
  ASSERT_TRUE(w->WriteCollections(testing::CollectionsJson(1)).ok());
  ASSERT_TRUE(w->Close().ok());
  feed.Poll({});
  const std::string text = metrics.Render();
  EXPECT_TRUE(Has(text, "trainscope_step{mode=\"TRAIN\"} 2")) << text;
  EXPECT_TRUE(Has(text, "trainscope_loss_step 2")) << text;
  EXPECT_TRUE(Has(text, "trainscope_loss 1.5")) << text;  // the mean of step 2's {1, 2}
}

}  // namespace
}  // namespace trainscope
