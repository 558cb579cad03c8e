#include "trainscope/finding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace trainscope {
namespace {

RuleFinding Sample() {
  RuleFinding f;
  f.rule = "VanishingGradient";
  f.status = RuleEvaluationStatus::kIssuesFound;
  f.step = 400;
  f.mode = Mode::kTrain;
  f.tensor = "gradients/fc1.weight";
  f.value = 1e-9;
  f.threshold = 1e-7;
  f.explanation = "mean |gradient| 1e-09 fell below 1e-07";
  f.recommendation = "Use ReLU instead of sigmoid, or add batch normalisation.";
  f.time_micros = 1795255200123456;  // 2026-11-21T10:00:00.123456Z
  return f;
}

TEST(RuleStatusTest, NamesAreSageMakersAndRoundTrip) {
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kInProgress), "InProgress");
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kIssuesFound), "IssuesFound");
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kNoIssuesFound), "NoIssuesFound");
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kError), "Error");
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kStopped), "Stopped");
  for (RuleEvaluationStatus s : kAllRuleEvaluationStatuses) {
    EXPECT_EQ(RuleEvaluationStatusFromName(RuleEvaluationStatusName(s)), s);
  }
  EXPECT_EQ(RuleEvaluationStatusFromName("issuesfound"), RuleEvaluationStatus::kIssuesFound);
  EXPECT_FALSE(RuleEvaluationStatusFromName("Stopping").has_value());
  EXPECT_FALSE(RuleEvaluationStatusFromName("").has_value());
}

TEST(FindingTest, JsonRoundTripKeepsEveryField) {
  RuleFinding f = Sample();
  std::string json = RuleFindingToJson(f);
  EXPECT_EQ(json.find('\n'), std::string::npos) << "one line";
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["kind"], "finding");
  EXPECT_EQ(j["rule"], "VanishingGradient");
  EXPECT_EQ(j["status"], "IssuesFound");
  EXPECT_EQ(j["step"], 400);
  EXPECT_EQ(j["mode"], "TRAIN");
  EXPECT_EQ(j["time"], "2026-11-21T10:00:00.123456Z");
  EXPECT_EQ(j["time_us"], 1795255200123456);

  auto back = RuleFindingFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->kind, f.kind);
  EXPECT_EQ(back->rule, f.rule);
  EXPECT_EQ(back->status, f.status);
  EXPECT_EQ(back->step, f.step);
  EXPECT_EQ(back->mode, f.mode);
  EXPECT_EQ(back->tensor, f.tensor);
  EXPECT_EQ(back->value, f.value);
  EXPECT_EQ(back->threshold, f.threshold);
  EXPECT_EQ(back->explanation, f.explanation);
  EXPECT_EQ(back->recommendation, f.recommendation);
  EXPECT_EQ(back->time_micros, f.time_micros);
}

TEST(FindingTest, NonFiniteValuesSurviveJson) {
  RuleFinding f = Sample();
  f.value = std::numeric_limits<double>::quiet_NaN();
  f.threshold = -std::numeric_limits<double>::infinity();
  auto j = nlohmann::json::parse(RuleFindingToJson(f));
  EXPECT_EQ(j["value"], "NaN");
  EXPECT_EQ(j["threshold"], "-Infinity");
  auto back = RuleFindingFromJson(RuleFindingToJson(f));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::isnan(*back->value));
  EXPECT_TRUE(std::isinf(*back->threshold) && *back->threshold < 0);
}

TEST(FindingTest, StatusChangeOmitsAbsentFields) {
  RuleFinding f =
      RuleFinding::StatusChange("LossNotDecreasing", RuleEvaluationStatus::kNoIssuesFound,
                                "training ended; loss kept decreasing");
  auto j = nlohmann::json::parse(RuleFindingToJson(f));
  EXPECT_EQ(j["kind"], "status");
  EXPECT_EQ(j["status"], "NoIssuesFound");
  for (const char* key :
       {"step", "mode", "tensor", "value", "threshold", "recommendation", "time_us"}) {
    EXPECT_FALSE(j.contains(key)) << key;
  }
  auto back = RuleFindingFromJson(RuleFindingToJson(f));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->kind, FindingKind::kStatusChange);
  EXPECT_EQ(back->step, -1);
  EXPECT_FALSE(back->value.has_value());
  EXPECT_FALSE(back->mode.has_value());
}

TEST(FindingTest, BadJsonNamesTheKey) {
  auto missing_rule = RuleFindingFromJson(R"({"status":"IssuesFound"})");
  ASSERT_FALSE(missing_rule.ok());
  EXPECT_NE(missing_rule.status().message().find("\"rule\""), std::string::npos);

  auto bad_status = RuleFindingFromJson(R"({"rule":"R","status":"Exploded"})");
  ASSERT_FALSE(bad_status.ok());
  EXPECT_NE(bad_status.status().message().find("\"status\""), std::string::npos);
  EXPECT_NE(bad_status.status().message().find("Exploded"), std::string::npos);

  auto bad_step = RuleFindingFromJson(R"({"rule":"R","status":"Error","step":"ten"})");
  ASSERT_FALSE(bad_step.ok());
  EXPECT_NE(bad_step.status().message().find("\"step\""), std::string::npos);

  auto bad_value = RuleFindingFromJson(R"({"rule":"R","status":"Error","value":"lots"})");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.status().message().find("\"value\""), std::string::npos);

  auto bad_mode = RuleFindingFromJson(R"({"rule":"R","status":"Error","mode":"TRAINING"})");
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_NE(bad_mode.status().message().find("\"mode\""), std::string::npos);

  auto not_json = RuleFindingFromJson("{rule: R");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().code(), StatusCode::kInvalidArgument);

  auto ok_extra = RuleFindingFromJson(R"({"rule":"R","status":"error","future_key":[1,2]})");
  ASSERT_TRUE(ok_extra.ok()) << "unknown keys are ignored";
  EXPECT_EQ(ok_extra->status, RuleEvaluationStatus::kError);
}

// One struct, one codec: every key for events.jsonl, the event log's keys for the actions.
TEST(FindingTest, KeySetsOfRuleOutputAndActions) {
  RuleFinding f = Sample();
  f.mode_step = 396;
  f.condition = "mean(|gradient|) < threshold";
  f.trial = "/runs/r1";
  f.stop_training = true;
  auto all = nlohmann::json::parse(RuleFindingToJson(f));
  auto actions = nlohmann::json::parse(RuleFindingToJson(f, FindingKeys::kActions));
  EXPECT_EQ(all["mode_step"], 396);
  EXPECT_EQ(all["condition"], "mean(|gradient|) < threshold");
  EXPECT_EQ(all["trial"], "/runs/r1");
  EXPECT_EQ(all["stop_training"], true);
  for (const char* key : {"mode_step", "condition", "trial", "stop_training"}) {
    EXPECT_FALSE(actions.contains(key)) << key;
    all.erase(key);
  }
  EXPECT_EQ(all, actions) << "the other keys are the same";
  auto back = RuleFindingFromJson(RuleFindingToJson(f));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->mode_step, 396);
  EXPECT_EQ(back->condition, f.condition);
  EXPECT_EQ(back->trial, f.trial);
  EXPECT_TRUE(back->stop_training);
}

TEST(FindingTest, AnEventsLineTakesItsFolderForWhatItLeavesOut) {
  const std::string line = R"({"time_us":1795255200000000,"explanation":"x"})";
  EXPECT_FALSE(RuleFindingFromJson(line).ok()) << "no rule, no status";
  auto f = RuleFindingFromEventsLine(line, "LowGPUUtilization");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->rule, "LowGPUUtilization");
  EXPECT_EQ(f->status, RuleEvaluationStatus::kIssuesFound);
  EXPECT_EQ(f->kind, FindingKind::kFinding);
  EXPECT_EQ(f->time_micros, 1795255200000000);
  auto own = RuleFindingFromEventsLine(R"({"rule":"Other","status":"Error"})", "Folder");
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->rule, "Other");
  EXPECT_EQ(own->status, RuleEvaluationStatus::kError);
  EXPECT_FALSE(RuleFindingFromEventsLine(R"({"status":"Exploded"})", "R").ok());
  EXPECT_FALSE(RuleFindingFromEventsLine(R"({"step":"ten"})", "R").ok());
  EXPECT_FALSE(RuleFindingFromEventsLine("[1]", "R").ok());
}

TEST(FindingTest, ANegativeStepIsNoStep) {
  auto f = RuleFindingFromJson(R"({"rule":"R","status":"Error","step":-5,"mode_step":-7})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->step, -1);
  EXPECT_EQ(f->mode_step, -1);
}

TEST(FindingTest, SummaryIsOneReadableLine) {
  std::string s = DescribeFinding(Sample());
  EXPECT_EQ(s,
            "VanishingGradient: IssuesFound at step 400 (TRAIN) on gradients/fc1.weight: value "
            "1e-09, threshold 1e-07. mean |gradient| 1e-09 fell below 1e-07");
  RuleFinding status =
      RuleFinding::StatusChange("Overfit", RuleEvaluationStatus::kError, "no EVAL data");
  EXPECT_EQ(DescribeFinding(status), "Overfit: Error. no EVAL data");
}

TEST(FindingTest, FormatTimeUtc) {
  EXPECT_EQ(FormatTimeUtc(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimeUtc(951782400000001), "2000-02-29T00:00:00.000001Z");
}

}  // namespace
}  // namespace trainscope
