// Walks tests/rules/profiler_cases/<Rule>/*.json: each case's system metrics and framework spans
// are written with the profiler's writers on a simulated clock, a real RuleRunner follows them,
// and the rule's findings (events.jsonl) and final status (status.json) are compared with the
// case's "expect". Adding a case is adding a file.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>

#include "case_files.h"
#include "prof_case.h"

namespace trainscope::rules_test {
namespace {

class ProfilerRuleCaseTest : public ::testing::TestWithParam<CaseFile> {};

TEST_P(ProfilerRuleCaseTest, Verdict) {
  const CaseFile& cf = GetParam();
  Json c = Json::parse(ReadText(cf.path.string()), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(c.is_discarded()) << cf.path << " is not valid JSON";
  ASSERT_TRUE(c.contains("expect")) << cf.path << " has no \"expect\"";
  const std::string rule = c.value("rule", cf.rule);
  const Json& expect = c["expect"];
  SCOPED_TRACE(cf.path.string() + ": " + c.value("description", std::string()));

  ProfilerCaseOutcome out = RunProfilerCase(c, rule);
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
  std::string found;
  for (const auto& f : out.findings) {
    found += "\n  step " + std::to_string(f.step) + " " + f.tensor + ": " + f.explanation;
  }
  const std::string message = out.status.value("message", std::string());
  if (expect.contains("status")) {
    EXPECT_EQ(out.status.value("status", std::string()), expect["status"].get<std::string>())
        << out.status.dump() << found;
  }
  if (expect.contains("message_contains")) {
    EXPECT_NE(message.find(expect["message_contains"].get<std::string>()), std::string::npos)
        << message;
  }
  if (expect.contains("fires")) {
    if (!expect["fires"].get<bool>()) {
      EXPECT_TRUE(out.findings.empty()) << "expected no finding, got:" << found;
      EXPECT_EQ(out.status.value("status", std::string()), "NoIssuesFound") << message;
    } else {
      ASSERT_FALSE(out.findings.empty()) << "expected a finding, got none; status: " << message;
      EXPECT_EQ(out.status.value("status", std::string()), "IssuesFound");
    }
  }
  if (!out.findings.empty()) {
    const RuleFinding& first = out.findings.front();
    if (expect.contains("series")) {
      EXPECT_EQ(first.tensor, expect["series"].get<std::string>());
    }
    if (expect.contains("value_at_least")) {
      EXPECT_GE(first.value.value_or(NAN), expect["value_at_least"].get<double>()) << found;
    }
    if (expect.contains("value_at_most")) {
      EXPECT_LE(first.value.value_or(NAN), expect["value_at_most"].get<double>()) << found;
    }
    if (expect.contains("step_between")) {
      EXPECT_GE(first.step, expect["step_between"][0].get<int64_t>()) << found;
      EXPECT_LE(first.step, expect["step_between"][1].get<int64_t>()) << found;
    }
    if (expect.contains("explanation_contains")) {
      EXPECT_NE(first.explanation.find(expect["explanation_contains"].get<std::string>()),
                std::string::npos)
          << first.explanation;
    }
  }
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

// `trainscope run` evaluates the profiler rules in one runner, which reads the profile once for
// all of them (SharedProfilerFeed): each case's rule, evaluated beside every other profiler rule,
// must find exactly what it finds alone.
TEST_P(ProfilerRuleCaseTest, SameVerdictBesideEveryOtherProfilerRule) {
  const CaseFile& cf = GetParam();
  Json c = Json::parse(ReadText(cf.path.string()), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(c.is_discarded()) << cf.path << " is not valid JSON";
  const std::string rule = c.value("rule", cf.rule);
  std::vector<std::string> others;
  for (const auto& name : RuleNames()) {
    if (DescribeRule(name)->kind == "profiler" && name != rule) others.push_back(name);
  }
  ASSERT_EQ(others.size(), 11u);
  ProfilerCaseOutcome alone = RunProfilerCase(c, rule);
  if (!alone.created) return;  // a create_error case
  ProfilerCaseOutcome beside = RunProfilerCase(c, rule, others);
  auto text = [](const ProfilerCaseOutcome& o) {
    std::string t =
        o.status.value("status", std::string()) + ": " + o.status.value("message", std::string());
    for (const auto& f : o.findings) {
      t += "\n  step " + std::to_string(f.step) + " " + f.tensor + ": " + f.explanation;
    }
    return t;
  };
  EXPECT_EQ(text(beside), text(alone));
}

INSTANTIATE_TEST_SUITE_P(Cases, ProfilerRuleCaseTest,
                         ::testing::ValuesIn(ListCaseFiles("profiler_cases")), CaseTestName);

// Every profiler rule has a case where it stays quiet, one where it fires (except the summary
// rules, which never fire) and, for the GPU rules, one on data without GPUs.
TEST(ProfilerRuleCasesCoverage, EveryProfilerRuleHasCases) {
  std::map<std::string, std::array<int, 3>> seen;  // fires, quiet, no-GPU note
  for (const auto& cf : ListCaseFiles("profiler_cases")) {
    Json c = Json::parse(ReadText(cf.path.string()), nullptr, false);
    ASSERT_FALSE(c.is_discarded()) << cf.path;
    const Json& e = c["expect"];
    auto& s = seen[c.value("rule", cf.rule)];
    if (e.value("fires", false)) ++s[0];
    if (e.contains("fires") && !e["fires"].get<bool>()) ++s[1];
    if (e.value("message_contains", std::string()).find("no GPU metrics") != std::string::npos) {
      ++s[2];
    }
  }
  const std::set<std::string> summaries = {"OverallSystemUsage", "OverallFrameworkMetrics"};
  const std::set<std::string> gpu_rules = {"LowGPUUtilization", "GPUMemoryIncrease",
                                           "LoadBalancing", "BatchSize", "CPUBottleneck"};
  int profiler_rules = 0;
  for (const auto& name : RuleNames()) {
    if (DescribeRule(name)->kind != "profiler") continue;
    ++profiler_rules;
    if (!summaries.count(name)) {
      EXPECT_GE(seen[name][0], 1) << name << " has no firing case";
    }
    EXPECT_GE(seen[name][1], 1) << name << " has no quiet case";
    if (gpu_rules.count(name)) {
      EXPECT_GE(seen[name][2], 1) << name << " has no no-GPU case";
    }
  }
  EXPECT_EQ(profiler_rules, 12);
}

// A GPU rule on data without GPUs ends NoIssuesFound with the reason, never Error; every profiler
// rule rejects an unknown parameter by name.
TEST(ProfilerRules, UnknownParametersAreRejectedWithTheValidOnes) {
  for (const auto& name : RuleNames()) {
    if (DescribeRule(name)->kind != "profiler") continue;
    auto r = CreateRule(name, {{"patiense", "10"}});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("unknown parameter 'patiense' for rule " + name +
                                        "; valid parameters: "),
              std::string::npos)
        << r.status().message();
  }
}

// Profiler rules keep bounded state: a run four times longer leaves the same state (windows,
// histograms, thinned step index, bucketed series), not one entry per sample or step.
TEST(ProfilerRules, StateStaysBoundedOnLongRuns) {
  auto long_run = [](double seconds) {
    Json c = Json::parse(R"({"chunk_seconds": 60, "segments": [{"cores": 4, "gpus": 2,
        "cpu": {"uniform": [10, 90]}, "gpu_util": {"uniform": [10, 90]},
        "gpu_mem": {"uniform": [30, 35]}, "rss_mb": {"uniform": [500, 520]},
        "steps": {"ms": 400, "data_ms": 100}}]})");
    c["segments"][0]["seconds"] = seconds;
    return c;
  };
  for (const auto& name : RuleNames()) {
    if (DescribeRule(name)->kind != "profiler") continue;
    SCOPED_TRACE(name);
    ProfilerCaseOutcome short_run = RunProfilerCase(long_run(1800), name);
    ProfilerCaseOutcome four_times = RunProfilerCase(long_run(7200), name);
    ASSERT_TRUE(short_run.created && four_times.created);
    EXPECT_GT(short_run.state_bytes, 0u);
    EXPECT_LE(four_times.state_bytes, short_run.state_bytes + short_run.state_bytes / 4 + 1024)
        << "30 min: " << short_run.state_bytes << " bytes, 2 h: " << four_times.state_bytes;
  }
}

}  // namespace
}  // namespace trainscope::rules_test
