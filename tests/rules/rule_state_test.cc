// status.json's codec and writer (RuleStateToJson, RuleStateFromJson, WriteRuleState in
// trainscope/rule_runner.h): every field round-trips; damaged files are refused naming the key;
// the writer puts the file where docs/formats/rule_output.md says.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "rule_case.h"
#include "trainscope/rule_runner.h"

namespace trainscope::rules_test {
namespace {

RuleState Sample() {
  RuleState s;
  s.rule = "VanishingGradient";
  s.status = RuleEvaluationStatus::kIssuesFound;
  s.message = "mean |gradient| of gradient/fc1.weight is 1e-09";
  s.steps_evaluated = 31;
  s.steps_skipped = 2;
  s.last_step = 30;
  s.findings = 3;
  s.suppressed = 1;
  s.first_finding_step = 12;
  s.finished = true;
  s.parameters = {{"threshold", "0.0000001"}};
  return s;
}

TEST(RuleState, EveryFieldRoundTrips) {
  const RuleState s = Sample();
  const std::string text = RuleStateToJson(s, "/runs/r1", 1700000031000000);
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["trial"], "/runs/r1");
  EXPECT_EQ(j["updated"], "2023-11-14T22:13:51.000000Z");
  auto back = RuleStateFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rule, s.rule);
  EXPECT_EQ(back->status, s.status);
  EXPECT_EQ(back->message, s.message);
  EXPECT_EQ(back->steps_evaluated, 31);
  EXPECT_EQ(back->steps_skipped, 2);
  EXPECT_EQ(back->last_step, 30);
  EXPECT_EQ(back->findings, 3);
  EXPECT_EQ(back->suppressed, 1);
  EXPECT_EQ(back->first_finding_step, 12);
  EXPECT_TRUE(back->finished);
  EXPECT_EQ(back->parameters, s.parameters);
}

TEST(RuleState, DamagedFilesAreRefusedNamingTheKey) {
  for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
           {"", "not a JSON object"},
           {"[1]", "not a JSON object"},
           {R"({"rule": 3})", "\"rule\""},
           {R"({"status": "Fine"})", "\"status\""},
           {R"({"findings": "3"})", "\"findings\""},
           {R"({"finished": 1})", "\"finished\""},
           {R"({"parameters": {"threshold": 1}})", "\"parameters\""}}) {
    auto r = RuleStateFromJson(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(key), std::string::npos) << r.status().ToString();
  }
  // Absent keys keep their defaults; unknown keys are ignored.
  auto r = RuleStateFromJson(R"({"rule": "X", "future_key": [1, 2]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, RuleEvaluationStatus::kInProgress);
  EXPECT_EQ(r->last_step, -1);
}

TEST(RuleState, WriterPutsTheFileInTheRulesFolder) {
  TempDir tmp;
  ASSERT_TRUE(WriteRuleState(Env::Default(), tmp.path(), Sample(), 1700000031000000).ok());
  auto text = Env::Default()->ReadFile(tmp.path() + "/rule-output/VanishingGradient/status.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto back = RuleStateFromJson(*text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->findings, 3);
}

}  // namespace
}  // namespace trainscope::rules_test
