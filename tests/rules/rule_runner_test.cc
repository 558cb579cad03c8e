// RuleRunner and InvokeRule on real trials: following a trial written by another thread and by
// another process, statuses and rule-output files, a crashing rule, shared reads, Stop(),
// smdebug's invoke_rule loop semantics, and custom rules in smdebug's style.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "rule_case.h"
#include "trainscope/rule_data.h"

namespace trainscope::rules_test {
namespace {

const char* kLoss = "CrossEntropyLoss_output_0";

// Writes steps [begin, end) of a small training: a loss, fc1.weight and its gradient, whose
// mean |g| drops to 1e-9 from `vanish_at` on (a planted vanishing gradient).
void WriteTraining(TrialWriter& w, int64_t begin, int64_t end, int64_t vanish_at,
                   int64_t nan_at = -1) {
  std::vector<float> g(16), wt(16);
  for (int64_t s = begin; s < end; ++s) {
    ASSERT_TRUE(w.BeginStep(s, Mode::kTrain, s).ok());
    const float scale = s >= vanish_at ? 1e-9f : 1e-3f;
    for (int i = 0; i < 16; ++i) {
      g[i] = scale * static_cast<float>((i % 2) ? 1 : -1);
      wt[i] = 0.1f * static_cast<float>(i) - 0.8f + 0.001f * static_cast<float>(s);
    }
    if (s == nan_at) g[3] = NAN;
    const float loss = 2.0f / (1.0f + 0.1f * static_cast<float>(s));
    ASSERT_TRUE(w.AddTensor("gradient/fc1.weight", {DType::kF32, g.data(), {4, 4}, {}, {}}).ok());
    ASSERT_TRUE(w.AddTensor("fc1.weight", {DType::kF32, wt.data(), {4, 4}, {}, {}}).ok());
    ASSERT_TRUE(w.AddTensor(kLoss, TensorView::Scalar(DType::kF32, &loss)).ok());
    ASSERT_TRUE(w.EndStep().ok());
  }
}

std::vector<RuleFinding> ReadEvents(const std::string& dir) {
  std::vector<RuleFinding> out;
  std::stringstream ss(ReadText(dir + "/events.jsonl"));
  for (std::string line; std::getline(ss, line);) {
    if (line.empty()) continue;
    auto f = RuleFindingFromJson(line);
    EXPECT_TRUE(f.ok()) << line;
    if (f.ok()) out.push_back(*f);
  }
  return out;
}

Json ReadStatus(const std::string& dir) {
  return Json::parse(ReadText(dir + "/status.json"), nullptr, false);
}

std::unique_ptr<Rule> Make(const std::string& name, const RuleParams& p = {}) {
  auto r = CreateRule(name, p);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

std::shared_ptr<Trial> OpenTrial(const std::string& path) {
  auto t = Trial::OpenWhenReady(path, FastTrialOptions(), std::chrono::seconds(60),
                                std::chrono::milliseconds(5));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::shared_ptr<Trial>(std::move(t).value()) : nullptr;
}

TEST(RuleRunner, FollowsATrialWrittenByAnotherThread) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  auto w = OpenWriter(path);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());

  std::thread trainer([&] {
    for (int64_t s = 0; s < 60; s += 5) {
      WriteTraining(*w, s, s + 5, /*vanish_at=*/30);
      ASSERT_TRUE(w->Flush().ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(w->Close().ok());
  });

  auto trial = OpenTrial(path);
  ASSERT_NE(trial, nullptr);
  RuleRunner runner(trial);
  std::vector<std::string> sunk;
  std::vector<RuleFinding> sunk_findings;
  runner.AddSink([&](const RuleFinding& f, const std::string& json) {
    sunk.push_back(json);
    sunk_findings.push_back(f);
  });
  ASSERT_TRUE(runner.AddRule(Make("VanishingGradient")).ok());
  ASSERT_TRUE(runner.AddRule(Make("ExplodingTensor")).ok());
  ASSERT_TRUE(runner.AddRule(Make("LossNotDecreasing")).ok());
  Status s = runner.Run();
  trainer.join();
  ASSERT_TRUE(s.ok()) << s.ToString();

  const std::string vg = runner.RuleOutputDir("VanishingGradient");
  auto events = ReadEvents(vg);
  ASSERT_FALSE(events.empty());
  // VanishingGradient reports a gradient below its threshold at two saved steps in a row: the
  // gradient vanishes from step 30, the finding is at 31.
  EXPECT_EQ(events[0].step, 31);
  EXPECT_EQ(events[0].tensor, "gradient/fc1.weight");
  EXPECT_EQ(events[0].mode, Mode::kTrain);
  EXPECT_EQ(events[0].mode_step, 31);
  EXPECT_NEAR(*events[0].value, 1e-9, 1e-12);
  EXPECT_DOUBLE_EQ(*events[0].threshold, 1e-7);
  EXPECT_EQ(events[0].trial, path);
  Json st = ReadStatus(vg);
  EXPECT_EQ(st["status"], "IssuesFound");
  EXPECT_EQ(st["finished"], true);
  EXPECT_EQ(st["last_step"], 59);
  EXPECT_EQ(st["steps_evaluated"], 60);
  EXPECT_EQ(st["first_finding_step"], 31);
  EXPECT_EQ(st["parameters"]["threshold"], "0.0000001");
  // The sink saw exactly what events.jsonl holds.
  ASSERT_EQ(sunk.size(), events.size());
  std::stringstream lines(ReadText(vg + "/events.jsonl"));
  for (size_t i = 0; i < sunk.size(); ++i) {
    std::string line;
    std::getline(lines, line);
    EXPECT_EQ(sunk[i], line);
    EXPECT_EQ(sunk_findings[i].rule, "VanishingGradient");
  }
  EXPECT_EQ(ReadStatus(runner.RuleOutputDir("ExplodingTensor"))["status"], "NoIssuesFound");
  EXPECT_EQ(ReadStatus(runner.RuleOutputDir("LossNotDecreasing"))["status"], "NoIssuesFound");
  for (const auto& state : runner.states()) EXPECT_TRUE(state.finished) << state.rule;
}

TEST(RuleRunner, FollowsATrialWrittenByAnotherProcess) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The "training process": writes 40 steps with a NaN planted at step 17, then exits.
    auto w = OpenWriter(path);
    if (w == nullptr || !w->WriteCollections(CollectionsJson({})).ok()) _exit(2);
    for (int64_t s = 0; s < 40; ++s) {
      WriteTraining(*w, s, s + 1, /*vanish_at=*/1000, /*nan_at=*/17);
      if (!w->Flush().ok()) _exit(4);
      usleep(1000);
    }
    _exit(w->Close().ok() ? 0 : 3);
  }
  auto trial = OpenTrial(path);
  ASSERT_NE(trial, nullptr);
  RuleRunner runner(trial);
  std::atomic<int64_t> nan_step{-1};
  runner.AddSink([&](const RuleFinding& f, const std::string&) {
    if (f.rule == "ExplodingTensor" && nan_step.load() < 0) nan_step = f.step;
  });
  ASSERT_TRUE(runner.AddRule(Make("ExplodingTensor")).ok());
  ASSERT_TRUE(runner.AddRule(Make("VanishingGradient")).ok());
  ASSERT_TRUE(runner.Run().ok());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(nan_step.load(), 17);
  auto events = ReadEvents(runner.RuleOutputDir("ExplodingTensor"));
  ASSERT_EQ(events.size(), 1u);  // the NaN is only at step 17
  EXPECT_EQ(events[0].tensor, "gradient/fc1.weight");
  EXPECT_NE(events[0].explanation.find("1 NaN"), std::string::npos) << events[0].explanation;
  EXPECT_EQ(ReadStatus(runner.RuleOutputDir("VanishingGradient"))["status"], "NoIssuesFound");
}

// A rule that throws at step 3, one that returns an internal error at step 5, and one healthy.
class ThrowingRule : public Rule {
 public:
  ThrowingRule() : Rule("Thrower") {}
  Result<Verdict> InvokeAtStep(int64_t step) override {
    if (step == 3) throw std::runtime_error("boom at three");
    return Verdict::NotMet();
  }
};
class FailingRule : public Rule {
 public:
  FailingRule() : Rule("Failer") {}
  Result<Verdict> InvokeAtStep(int64_t step) override {
    ++calls;
    if (step == 5) return Status::Internal("cannot compute the thing");
    return Verdict::NotMet();
  }
  int calls = 0;
};

TEST(RuleRunner, ACrashingRuleGetsErrorAndTheOthersGoOn) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  auto w = OpenWriter(path);
  ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());
  WriteTraining(*w, 0, 20, /*vanish_at=*/10);
  ASSERT_TRUE(w->Close().ok());
  RuleRunner runner(OpenTrial(path));
  auto failing = std::make_unique<FailingRule>();
  FailingRule* failing_ptr = failing.get();
  ASSERT_TRUE(runner.AddRule(std::make_unique<ThrowingRule>()).ok());
  ASSERT_TRUE(runner.AddRule(std::move(failing)).ok());
  ASSERT_TRUE(runner.AddRule(Make("VanishingGradient")).ok());
  ASSERT_TRUE(runner.Run().ok());

  Json thrower = ReadStatus(runner.RuleOutputDir("Thrower"));
  EXPECT_EQ(thrower["status"], "Error");
  EXPECT_NE(thrower["message"].get<std::string>().find("boom at three"), std::string::npos)
      << thrower.dump();
  EXPECT_NE(thrower["message"].get<std::string>().find("step 3"), std::string::npos);
  EXPECT_EQ(thrower["last_step"], 2);
  Json failer = ReadStatus(runner.RuleOutputDir("Failer"));
  EXPECT_EQ(failer["status"], "Error");
  EXPECT_NE(failer["message"].get<std::string>().find("cannot compute the thing"),
            std::string::npos);
  EXPECT_EQ(failing_ptr->calls, 6);  // steps 0..5, then no more
  Json vg = ReadStatus(runner.RuleOutputDir("VanishingGradient"));
  EXPECT_EQ(vg["status"], "IssuesFound");
  EXPECT_EQ(vg["last_step"], 19);
  EXPECT_EQ(vg["first_finding_step"], 11);  // vanishing from 10, two saved steps in a row
}

TEST(RuleRunner, RulesSharingTensorsReadThemOnce) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  auto w = OpenWriter(path);
  ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());
  WriteTraining(*w, 0, 10, /*vanish_at=*/100);
  ASSERT_TRUE(w->Close().ok());

  // Alone, VanishingGradient reads each gradient once per step.
  RunnerOptions ro;
  ro.write_output = false;
  RuleRunner alone(OpenTrial(path), ro);
  ASSERT_TRUE(alone.AddRule(Make("VanishingGradient")).ok());
  ASSERT_TRUE(alone.Run().ok());
  const RuleDataStats a = alone.stats().data;
  EXPECT_EQ(a.value_reads, 10);  // one tensor x 10 steps
  EXPECT_EQ(a.stats_computed, 10);

  // With three more rules reading the same gradient (abs_mean, NaN check, variance, zeros),
  // nothing is read or reduced twice.
  RuleRunner shared(OpenTrial(path), ro);
  ASSERT_TRUE(shared.AddRule(Make("VanishingGradient")).ok());
  ASSERT_TRUE(shared.AddRule(Make("ExplodingTensor", {{"collection_names", "gradients"}})).ok());
  ASSERT_TRUE(shared
                  .AddRule(Make("TensorVariance",
                                {{"collection_names", "gradients"}, {"max_threshold", "100"}}))
                  .ok());
  ASSERT_TRUE(shared.AddRule(Make("AllZero", {{"collection_names", "gradients"}})).ok());
  ASSERT_TRUE(shared.Run().ok());
  const RuleDataStats b = shared.stats().data;
  EXPECT_EQ(b.value_reads, 10);
  EXPECT_EQ(b.stats_computed, 10);
  EXPECT_GE(b.stats_hits, 30);  // the three other rules
  EXPECT_LE(b.cached_steps, 2u);
}

TEST(RuleRunner, StopBeforeTheEndGivesStopped) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  auto w = OpenWriter(path);
  ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());
  WriteTraining(*w, 0, 5, /*vanish_at=*/3);
  ASSERT_TRUE(w->Flush().ok());  // the training goes on (no end marker)
  RuleRunner runner(OpenTrial(path));
  ASSERT_TRUE(runner.AddRule(Make("VanishingGradient")).ok());
  ASSERT_TRUE(runner.AddRule(Make("ExplodingTensor")).ok());
  std::thread stopper([&] {
    // Stop once both rules saw the 5 steps.
    for (int i = 0; i < 5000; ++i) {
      auto st = runner.states();
      if (st.size() == 2 && st[0].last_step == 4 && st[1].last_step == 4) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    runner.Stop();
  });
  ASSERT_TRUE(runner.Run().ok());
  stopper.join();
  Json vg = ReadStatus(runner.RuleOutputDir("VanishingGradient"));
  EXPECT_EQ(vg["status"], "IssuesFound");  // found before the stop: stays IssuesFound
  Json ex = ReadStatus(runner.RuleOutputDir("ExplodingTensor"));
  EXPECT_EQ(ex["status"], "Stopped");
  EXPECT_EQ(ex["finished"], true);
  EXPECT_EQ(ex["last_step"], 4);
  ASSERT_TRUE(w->Close().ok());
}

// stats() and states() from another thread while Run() evaluates (TSan checks the snapshot).
TEST(RuleRunner, StatsAndStatesMayBeReadFromAnotherThread) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  auto w = OpenWriter(path);
  ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());
  WriteTraining(*w, 0, 200, /*vanish_at=*/0);  // findings at every step: the per-tensor counts
  ASSERT_TRUE(w->Close().ok());
  RuleRunner runner(OpenTrial(path));
  ASSERT_TRUE(runner.AddRule(Make("VanishingGradient")).ok());
  ASSERT_TRUE(runner.AddRule(Make("LossNotDecreasing")).ok());
  ASSERT_TRUE(runner.AddRule(Make("ExplodingTensor")).ok());
  std::atomic<bool> done{false};
  int64_t last_seen = 0;
  bool consistent = true;
  std::thread reader([&] {
    do {
      const RunnerStats st = runner.stats();
      // One snapshot: the step counters agree and only grow.
      consistent =
          consistent && st.steps_evaluated >= last_seen && st.last_step == st.steps_evaluated - 1;
      last_seen = st.steps_evaluated;
      consistent = consistent && runner.states().size() == 3;
    } while (!done.load());
  });
  Status s = runner.Run();
  done.store(true);
  reader.join();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(consistent);
  const RunnerStats st = runner.stats();
  EXPECT_EQ(st.steps_evaluated, 200);
  EXPECT_EQ(st.last_step, 199);
  EXPECT_GE(st.polls, 1);
  EXPECT_EQ(st.tracked_tensor_keys, 1);  // VanishingGradient's one gradient
  EXPECT_GT(st.rule_state_bytes, 0u);
  EXPECT_GT(st.data.value_reads, 0);
}

TEST(RuleRunner, RepeatedFindingsAreCappedPerTensor) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  auto w = OpenWriter(path);
  ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());
  WriteTraining(*w, 0, 30, /*vanish_at=*/0);  // vanishes at every step
  ASSERT_TRUE(w->Close().ok());
  RunnerOptions ro;
  ro.max_events_per_tensor = 3;
  RuleRunner runner(OpenTrial(path), ro);
  ASSERT_TRUE(runner.AddRule(Make("VanishingGradient")).ok());
  ASSERT_TRUE(runner.Run().ok());
  EXPECT_EQ(ReadEvents(runner.RuleOutputDir("VanishingGradient")).size(), 3u);
  Json st = ReadStatus(runner.RuleOutputDir("VanishingGradient"));
  EXPECT_EQ(st["findings"], 3);
  EXPECT_EQ(st["suppressed"], 26);  // 29 findings: steps 1..29 (two saved steps in a row)
  EXPECT_EQ(st["status"], "IssuesFound");
}

TEST(RuleRunner, RefusesTwoRulesWithOneName) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  auto w = OpenWriter(path);
  ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());
  ASSERT_TRUE(w->Close().ok());
  RuleRunner runner(OpenTrial(path));
  ASSERT_TRUE(runner.AddRule(Make("DeadRelu")).ok());
  Status s = runner.AddRule(Make("DeadRelu"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(RuleRunner, ARuleThatCannotStartIsInError) {
  TempDir tmp;
  const std::string path = tmp.path() + "/trial";
  auto w = OpenWriter(path);
  ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());
  WriteTraining(*w, 0, 3, 100);
  ASSERT_TRUE(w->Close().ok());
  RuleRunner runner(OpenTrial(path));
  ASSERT_TRUE(
      runner.AddRule(Make("SimilarAcrossRuns", {{"other_trials", tmp.path() + "/no_such_trial"}}))
          .ok());
  ASSERT_TRUE(runner.AddRule(Make("ExplodingTensor")).ok());
  ASSERT_TRUE(runner.Run().ok());
  Json st = ReadStatus(runner.RuleOutputDir("SimilarAcrossRuns"));
  EXPECT_EQ(st["status"], "Error");
  EXPECT_NE(st["message"].get<std::string>().find("no_such_trial"), std::string::npos);
  EXPECT_EQ(ReadStatus(runner.RuleOutputDir("ExplodingTensor"))["status"], "NoIssuesFound");
}

// ---- smdebug-style custom rule and invoke_rule semantics ----

// smdebug's documented custom-rule example, in C++: the gradient's mean |g| compared with the
// previous step's, through required tensors.
class GradientDropRule : public Rule {
 public:
  explicit GradientDropRule(double factor) : Rule("GradientDrop"), factor_(factor) {}
  Status SetRequiredTensors(int64_t step, RequiredTensors& req) override {
    if (step == 0) return Status::OK();
    req.Add("gradient/.*", {step - 1, step}, 0, /*should_match_regex=*/true);
    return Status::OK();
  }
  Result<Verdict> InvokeAtStep(int64_t step) override {
    if (step == 0) return Verdict::NotMet();
    TS_ASSIGN_OR_RETURN(
        double now, data().ReductionValue("gradient/fc1.weight", step, {ReductionOp::kMean, true}));
    TS_ASSIGN_OR_RETURN(double before, data().ReductionValue("gradient/fc1.weight", step - 1,
                                                             {ReductionOp::kMean, true}));
    ++evaluated;
    if (now < before / factor_) return Verdict::Met();  // bool-style verdict
    return Verdict::NotMet();
  }
  double factor_;
  int evaluated = 0;
};

struct InvokeFixture {
  TempDir tmp;
  std::string path = tmp.path() + "/trial";
  std::shared_ptr<Trial> trial;
  std::unique_ptr<RuleData> data;
  // Steps 0..19 saved except 7 and 12; the gradient drops 1e6-fold at step 10.
  void Write(bool close = true) {
    auto w = OpenWriter(path);
    ASSERT_TRUE(w->WriteCollections(CollectionsJson({})).ok());
    for (int64_t s = 0; s < 20; ++s) {
      if (s == 7 || s == 12) continue;
      WriteTraining(*w, s, s + 1, /*vanish_at=*/10);
    }
    if (close) {
      ASSERT_TRUE(w->Close().ok());
    } else {
      ASSERT_TRUE(w->Flush().ok());
      writer = std::move(w);
    }
    trial = OpenTrial(path);
    data = std::make_unique<RuleData>(trial);
  }
  std::unique_ptr<TrialWriter> writer;
};

TEST(InvokeRule, LoopsLikeSmdebugUntilNoMoreData) {
  InvokeFixture f;
  f.Write();
  GradientDropRule rule(100);
  ASSERT_TRUE(rule.Bind(f.data.get()).ok());
  auto r = InvokeRule(rule, *f.data);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->condition_met);
  EXPECT_EQ(r->first_met_step, 10);
  EXPECT_EQ(r->last_step, 19);
  // Steps 1..19 but 7 and 12 (not saved), 8 and 13 (their required step-1 is missing): skipped
  // as smdebug skips TensorUnavailableForStep / StepUnavailable.
  EXPECT_EQ(rule.evaluated, 15);
  EXPECT_EQ(r->steps_evaluated, 16);  // + step 0
  EXPECT_EQ(r->findings_total, 1);
}

TEST(InvokeRule, RaiseEvalCondReturnsAtTheFirstMetCondition) {
  InvokeFixture f;
  f.Write();
  GradientDropRule rule(100);
  ASSERT_TRUE(rule.Bind(f.data.get()).ok());
  InvokeRuleOptions o;
  o.raise_eval_cond = true;
  auto r = InvokeRule(rule, *f.data, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->condition_met);
  EXPECT_EQ(r->last_step, 10);
}

TEST(InvokeRule, HonoursStartAndEndSteps) {
  InvokeFixture f;
  f.Write();
  GradientDropRule rule(100);
  ASSERT_TRUE(rule.Bind(f.data.get()).ok());
  InvokeRuleOptions o;
  o.start_step = 2;
  o.end_step = 10;  // exclusive: never sees the drop
  auto r = InvokeRule(rule, *f.data, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->condition_met);
  EXPECT_EQ(r->last_step, 9);
  EXPECT_EQ(rule.evaluated, 6);  // 2..9 without 7 and 8
}

TEST(InvokeRule, WaitsForStepsStillBeingWritten) {
  InvokeFixture f;
  f.Write(/*close=*/false);
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    WriteTraining(*f.writer, 20, 25, /*vanish_at=*/0);
    ASSERT_TRUE(f.writer->Close().ok());
  });
  auto rule = Make("VanishingGradient");
  ASSERT_TRUE(rule->Bind(f.data.get()).ok());
  InvokeRuleOptions o;
  o.start_step = 15;
  auto r = InvokeRule(*rule, *f.data, o);
  finisher.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_step, 24);  // ended by NoMoreData after the writer closed
  EXPECT_EQ(r->steps_evaluated, 10);
  EXPECT_EQ(r->findings_total, 9);  // from step 16: the second of two saved steps in a row
}

TEST(InvokeRule, OtherErrorsArePropagated) {
  InvokeFixture f;
  f.Write();
  FailingRule rule;
  ASSERT_TRUE(rule.Bind(f.data.get()).ok());
  auto r = InvokeRule(rule, *f.data);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("at step 5"), std::string::npos) << r.status().ToString();
  ThrowingRule thrower;
  ASSERT_TRUE(thrower.Bind(f.data.get()).ok());
  auto t = InvokeRule(thrower, *f.data);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("boom at three"), std::string::npos);
}

TEST(InvokeRule, EndOfRuleStopsTheLoop) {
  InvokeFixture f;
  f.Write();
  auto rule = Make("PoorWeightInitialization", {{"steps", "4"}});
  ASSERT_TRUE(rule->Bind(f.data.get()).ok());
  auto r = InvokeRule(*rule, *f.data);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->last_step, 3);
}

}  // namespace
}  // namespace trainscope::rules_test
