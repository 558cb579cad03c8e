// Walks tests/rules/cases/<Rule>/*.json: each case is written as a real trial, followed by a real
// RuleRunner, and the rule's findings (read back from events.jsonl) and final status
// (status.json) are compared with the case's "expect". Adding a case is adding a file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "case_files.h"
#include "rule_case.h"

namespace trainscope::rules_test {
namespace {

class RuleCaseTest : public ::testing::TestWithParam<CaseFile> {};

TEST_P(RuleCaseTest, Verdict) {
  const CaseFile& cf = GetParam();
  Json c = Json::parse(ReadText(cf.path.string()), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(c.is_discarded()) << cf.path << " is not valid JSON";
  ASSERT_TRUE(c.contains("expect")) << cf.path << " has no \"expect\"";
  const std::string rule = c.value("rule", cf.rule);
  const Json& expect = c["expect"];
  SCOPED_TRACE(cf.path.string() + ": " + c.value("description", std::string()));

  CaseOutcome out = RunCase(c, rule);
  if (expect.contains("create_error")) {
    ASSERT_FALSE(out.created) << "the rule was created, expected an error containing "
                              << expect["create_error"];
    EXPECT_NE(out.create_error.find(expect["create_error"].get<std::string>()), std::string::npos)
        << out.create_error;
    return;
  }
  ASSERT_TRUE(out.created) << out.create_error;
  ASSERT_FALSE(out.status.is_discarded()) << "status.json is not valid JSON";
  EXPECT_EQ(out.status.value("finished", false), true);
  EXPECT_EQ(out.status.value("findings", int64_t{-1}), static_cast<int64_t>(out.findings.size()));

  std::string found;
  for (const auto& f : out.findings) {
    found += "\n  step " + std::to_string(f.step) + " " + f.tensor + ": " + f.explanation;
  }
  if (expect.contains("status")) {
    EXPECT_EQ(out.status.value("status", std::string()), expect["status"].get<std::string>())
        << out.status.dump() << found;
  }
  if (expect.contains("error_contains")) {
    EXPECT_NE(out.status.value("message", std::string())
                  .find(expect["error_contains"].get<std::string>()),
              std::string::npos)
        << out.status.dump();
  }
  if (expect.contains("fires")) {
    const bool fires = expect["fires"];
    if (!fires) {
      EXPECT_TRUE(out.findings.empty()) << "expected no finding, got:" << found;
      if (!expect.contains("status")) {
        EXPECT_EQ(out.status.value("status", std::string()), "NoIssuesFound") << found;
      }
    } else {
      EXPECT_FALSE(out.findings.empty()) << "expected a finding, got none";
    }
  }
  if (expect.contains("fires_at")) {
    ASSERT_FALSE(out.findings.empty())
        << "expected a finding at step " << expect["fires_at"] << ", got none";
    EXPECT_EQ(out.findings.front().step, expect["fires_at"].get<int64_t>())
        << "first finding at the wrong step; findings:" << found;
    EXPECT_EQ(out.status.value("status", std::string()), "IssuesFound");
    EXPECT_EQ(out.status.value("first_finding_step", int64_t{-2}),
              expect["fires_at"].get<int64_t>());
  }
  if (expect.contains("fires_by")) {
    ASSERT_FALSE(out.findings.empty()) << "expected a finding by step " << expect["fires_by"];
    EXPECT_LE(out.findings.front().step, expect["fires_by"].get<int64_t>()) << found;
  }
  if (expect.contains("tensor") && !out.findings.empty()) {
    EXPECT_EQ(out.findings.front().tensor, expect["tensor"].get<std::string>()) << found;
  }
  if (expect.contains("condition_contains") && !out.findings.empty()) {
    EXPECT_NE(out.findings.front().condition.find(expect["condition_contains"].get<std::string>()),
              std::string::npos)
        << found;
  }
  if (expect.contains("stop_training") && !out.findings.empty()) {
    EXPECT_EQ(out.findings.front().stop_training, expect["stop_training"].get<bool>());
  }
  // Every finding is complete: what a person needs to act on it.
  for (const auto& f : out.findings) {
    EXPECT_EQ(f.rule, rule);
    EXPECT_FALSE(f.explanation.empty());
    EXPECT_FALSE(f.recommendation.empty());
    EXPECT_FALSE(f.condition.empty());
    EXPECT_TRUE(f.value.has_value());
    EXPECT_TRUE(f.threshold.has_value());
    EXPECT_GT(f.time_micros, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RuleCaseTest, ::testing::ValuesIn(ListCaseFiles("cases")),
                         CaseTestName);

// Every built-in rule has at least one case where it fires and one where it does not.
TEST(RuleCasesCoverage, EveryBuiltinRuleHasFiringAndQuietCases) {
  std::map<std::string, std::pair<int, int>> seen;  // rule -> (fires, quiet)
  for (const auto& cf : ListCaseFiles("cases")) {
    Json c = Json::parse(ReadText(cf.path.string()), nullptr, false);
    ASSERT_FALSE(c.is_discarded()) << cf.path;
    const Json& e = c["expect"];
    auto& s = seen[c.value("rule", cf.rule)];
    if (e.contains("fires_at") || e.value("fires", false)) ++s.first;
    if (e.contains("fires") && !e["fires"].get<bool>()) ++s.second;
  }
  for (const auto& name : RuleNames()) {
    if (DescribeRule(name)->kind == "profiler") continue;  // profiler_cases/ (prof_rule_cases_test)
    EXPECT_GE(seen[name].first, 1) << name << " has no case where it fires";
    EXPECT_GE(seen[name].second, 1) << name << " has no case where it stays quiet";
  }
}

}  // namespace
}  // namespace trainscope::rules_test
