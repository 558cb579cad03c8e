#include "trainscope/finding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace trainscope {
namespace {

Finding Sample() {
  Finding f;
  f.rule = "VanishingGradient";
  f.status = RuleStatus::kIssuesFound;
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
  EXPECT_EQ(RuleStatusName(RuleStatus::kInProgress), "InProgress");
  EXPECT_EQ(RuleStatusName(RuleStatus::kIssuesFound), "IssuesFound");
  EXPECT_EQ(RuleStatusName(RuleStatus::kNoIssuesFound), "NoIssuesFound");
  EXPECT_EQ(RuleStatusName(RuleStatus::kError), "Error");
  EXPECT_EQ(RuleStatusName(RuleStatus::kStopped), "Stopped");
  for (RuleStatus s : kAllRuleStatuses) {
    EXPECT_EQ(RuleStatusFromName(RuleStatusName(s)), s);
  }
  EXPECT_EQ(RuleStatusFromName("issuesfound"), RuleStatus::kIssuesFound);
  EXPECT_FALSE(RuleStatusFromName("Stopping").has_value());
  EXPECT_FALSE(RuleStatusFromName("").has_value());
}

TEST(FindingTest, JsonRoundTripKeepsEveryField) {
  Finding f = Sample();
  std::string json = FindingToJson(f);
  EXPECT_EQ(json.find('\n'), std::string::npos) << "one line";
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["kind"], "finding");
  EXPECT_EQ(j["rule"], "VanishingGradient");
  EXPECT_EQ(j["status"], "IssuesFound");
  EXPECT_EQ(j["step"], 400);
  EXPECT_EQ(j["mode"], "TRAIN");
  EXPECT_EQ(j["time"], "2026-11-21T10:00:00.123456Z");
  EXPECT_EQ(j["time_us"], 1795255200123456);

  auto back = FindingFromJson(json);
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
  Finding f = Sample();
  f.value = std::numeric_limits<double>::quiet_NaN();
  f.threshold = -std::numeric_limits<double>::infinity();
  auto j = nlohmann::json::parse(FindingToJson(f));
  EXPECT_EQ(j["value"], "NaN");
  EXPECT_EQ(j["threshold"], "-Infinity");
  auto back = FindingFromJson(FindingToJson(f));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::isnan(*back->value));
  EXPECT_TRUE(std::isinf(*back->threshold) && *back->threshold < 0);
}

TEST(FindingTest, StatusChangeOmitsAbsentFields) {
  Finding f = Finding::StatusChange("LossNotDecreasing", RuleStatus::kNoIssuesFound,
                                    "training ended; loss kept decreasing");
  auto j = nlohmann::json::parse(FindingToJson(f));
  EXPECT_EQ(j["kind"], "status");
  EXPECT_EQ(j["status"], "NoIssuesFound");
  for (const char* key :
       {"step", "mode", "tensor", "value", "threshold", "recommendation", "time_us"}) {
    EXPECT_FALSE(j.contains(key)) << key;
  }
  auto back = FindingFromJson(FindingToJson(f));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->kind, FindingKind::kStatusChange);
  EXPECT_EQ(back->step, -1);
  EXPECT_FALSE(back->value.has_value());
  EXPECT_FALSE(back->mode.has_value());
}

TEST(FindingTest, BadJsonNamesTheKey) {
  auto missing_rule = FindingFromJson(R"({"status":"IssuesFound"})");
  ASSERT_FALSE(missing_rule.ok());
  EXPECT_NE(missing_rule.status().message().find("\"rule\""), std::string::npos);

  auto bad_status = FindingFromJson(R"({"rule":"R","status":"Exploded"})");
  ASSERT_FALSE(bad_status.ok());
  EXPECT_NE(bad_status.status().message().find("\"status\""), std::string::npos);
  EXPECT_NE(bad_status.status().message().find("Exploded"), std::string::npos);

  auto bad_step = FindingFromJson(R"({"rule":"R","status":"Error","step":"ten"})");
  ASSERT_FALSE(bad_step.ok());
  EXPECT_NE(bad_step.status().message().find("\"step\""), std::string::npos);

  auto bad_value = FindingFromJson(R"({"rule":"R","status":"Error","value":"lots"})");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.status().message().find("\"value\""), std::string::npos);

  auto bad_mode = FindingFromJson(R"({"rule":"R","status":"Error","mode":"TRAINING"})");
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_NE(bad_mode.status().message().find("\"mode\""), std::string::npos);

  auto not_json = FindingFromJson("{rule: R");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().code(), StatusCode::kInvalidArgument);

  auto ok_extra = FindingFromJson(R"({"rule":"R","status":"error","future_key":[1,2]})");
  ASSERT_TRUE(ok_extra.ok()) << "unknown keys are ignored";
  EXPECT_EQ(ok_extra->status, RuleStatus::kError);
}

TEST(FindingTest, SummaryIsOneReadableLine) {
  std::string s = FindingSummary(Sample());
  EXPECT_EQ(s,
            "VanishingGradient: IssuesFound at step 400 (TRAIN) on gradients/fc1.weight: value "
            "1e-09, threshold 1e-07. mean |gradient| 1e-09 fell below 1e-07");
  Finding status = Finding::StatusChange("Overfit", RuleStatus::kError, "no EVAL data");
  EXPECT_EQ(FindingSummary(status), "Overfit: Error. no EVAL data");
}

TEST(FindingTest, FormatTimeUtc) {
  EXPECT_EQ(FormatTimeUtc(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimeUtc(951782400000001), "2000-02-29T00:00:00.000001Z");
}

}  // namespace
}  // namespace trainscope
