// Parameter parsing, the registry (smdebug's names and defaults for every built-in rule), the
// collections each rule asks for, and the finding JSON.
#include "trainscope/rule_params.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "trainscope/rule.h"
#include "trainscope/rule_registry.h"
#include "trainscope/save_config.h"

namespace trainscope {
namespace {

TEST(RuleParams, SplitsListsInEverySpelling) {
  EXPECT_EQ(SplitParamList("a,b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SplitParamList("[a, b]"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SplitParamList("['a', \"b\"]"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SplitParamList(" gradients "), (std::vector<std::string>{"gradients"}));
  EXPECT_TRUE(SplitParamList("None").empty());
  EXPECT_TRUE(SplitParamList("").empty());
  EXPECT_TRUE(SplitParamList("[]").empty());
}

TEST(RuleParams, ParsesTypesAndDefaults) {
  const std::vector<ParamSpec> specs = {
      {"d", ParamType::kDouble, "0.5", "a double"},
      {"i", ParamType::kInt, "3", "an int"},
      {"b", ParamType::kBool, "False", "a bool"},
      {"o", ParamType::kDouble, "None", "optional"},
      {"s", ParamType::kString, "x", "a string"},
      {"l", ParamType::kStringList, "None", "a list"},
      {"n", ParamType::kDoubleList, "1,2", "numbers"},
  };
  auto p = ParseRuleParams("R", specs, {{"d", "1e-7"}, {"b", "True"}, {"l", "[a,b]"}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_DOUBLE_EQ(p->Double("d"), 1e-7);
  EXPECT_EQ(p->Int("i"), 3);
  EXPECT_TRUE(p->Bool("b"));
  EXPECT_FALSE(p->OptDouble("o").has_value());
  EXPECT_FALSE(p->IsSet("o"));
  EXPECT_EQ(p->String("s"), "x");
  EXPECT_EQ(p->StringList("l"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p->DoubleList("n"), (std::vector<double>{1, 2}));
  EXPECT_EQ(p->effective().at("b"), "True");
  EXPECT_EQ(p->effective().at("o"), "None");
  EXPECT_EQ(p->effective().at("d"), "1e-7");

  for (const char* yes : {"true", "TRUE", "1", "yes"}) {
    auto q = ParseRuleParams("R", specs, {{"b", yes}});
    ASSERT_TRUE(q.ok()) << yes;
    EXPECT_TRUE(q->Bool("b")) << yes;
  }
  EXPECT_EQ(ParseRuleParams("R", specs, {{"i", "10.0"}})->Int("i"), 10);
}

TEST(RuleParams, RejectsUnknownNamesListingTheValidOnes) {
  const std::vector<ParamSpec> specs = {{"threshold", ParamType::kDouble, "1", ""},
                                        {"patience", ParamType::kInt, "2", ""}};
  auto p = ParseRuleParams("Thing", specs, {{"treshold", "1"}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(),
            "unknown parameter 'treshold' for rule Thing; valid parameters: threshold, patience");
}

TEST(RuleParams, RejectsValuesOfTheWrongType) {
  const std::vector<ParamSpec> specs = {{"threshold", ParamType::kDouble, "1", "limit"},
                                        {"n", ParamType::kInt, "2", "count"},
                                        {"b", ParamType::kBool, "False", "flag"}};
  for (auto [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"threshold", "abc"}, {"threshold", "1.5x"}, {"n", "2.5"}, {"b", "maybe"}}) {
    auto p = ParseRuleParams("R", specs, {{name, value}});
    ASSERT_FALSE(p.ok()) << name << "=" << value;
    EXPECT_NE(p.status().message().find("parameter " + name + "='" + value + "'"),
              std::string::npos)
        << p.status().message();
  }
}

// smdebug's parameter names and defaults (reference smdebug.md 5.2), which SageMaker users pass.
TEST(RuleRegistry, EveryBuiltinRuleHasSmdebugsParameterNamesAndDefaults) {
  const std::map<std::string, std::map<std::string, std::string>> expected = {
      {"VanishingGradient", {{"threshold", "0.0000001"}}},
      {"ExplodingTensor",
       {{"collection_names", "None"}, {"tensor_regex", "None"}, {"only_nan", "False"}}},
      {"LossNotDecreasing",
       {{"collection_names", "None"},
        {"tensor_regex", "None"},
        {"use_losses_collection", "True"},
        {"num_steps", "10"},
        {"diff_percent", "0.1"},
        {"increase_threshold_percent", "5"},
        {"mode", "None"}}},
      {"Overfit",
       {{"tensor_regex", "None"},
        {"start_step", "0"},
        {"patience", "1"},
        {"ratio_threshold", "0.1"}}},
      {"Overtraining", {{"patience_train", "5"}, {"patience_validation", "10"}, {"delta", "0.01"}}},
      {"SimilarAcrossRuns",
       {{"other_trials", "None"}, {"collection_names", "None"}, {"tensor_regex", "None"}}},
      {"TensorVariance",
       {{"collection_names", "None"},
        {"tensor_regex", "None"},
        {"max_threshold", "None"},
        {"min_threshold", "None"}}},
      {"UnchangedTensor",
       {{"collection_names", "None"},
        {"tensor_regex", "None"},
        {"num_steps", "3"},
        {"rtol", "1e-05"},
        {"atol", "1e-08"},
        {"equal_nan", "False"}}},
      {"CheckInputImages",
       {{"threshold_mean", "0.2"}, {"threshold_samples", "500"}, {"channel", "1"}}},
      {"NLPSequenceRatio", {{"token_values", "0"}, {"token_thresholds_percent", "50"}}},
      {"PoorWeightInitialization",
       {{"threshold", "10.0"},
        {"distribution_range", "0.001"},
        {"patience", "5"},
        {"steps", "10"}}},
      {"SaturatedActivation",
       {{"threshold_tanh_min", "-9.4999"},
        {"threshold_tanh_max", "9.4999"},
        {"threshold_sigmoid_min", "-23"},
        {"threshold_sigmoid_max", "16.99999"},
        {"threshold_inactivity", "1.0"},
        {"threshold_layer", "50.0"}}},
      {"DeadRelu", {{"threshold_inactivity", "1.0"}, {"threshold_layer", "50.0"}}},
      {"WeightUpdateRatio",
       {{"num_steps", "None"},
        {"large_threshold", "10.0"},
        {"small_threshold", "0.00000001"},
        {"epsilon", "0.000000001"}}},
      {"AllZero", {{"collection_names", "None"}, {"tensor_regex", "None"}, {"threshold", "100.0"}}},
      {"ClassImbalance",
       {{"threshold_imbalance", "10"},
        {"threshold_misprediction", "0.7"},
        {"samples", "500"},
        {"argmax", "False"},
        {"labels_regex", ".*labels"},
        {"predictions_regex", ".*predictions"}}},
      {"Confusion",
       {{"category_no", "None"},
        {"labels", "labels"},
        {"predictions", "predictions"},
        {"labels_collection", "labels"},
        {"predictions_collection", "predictions"},
        {"min_diag", "0.9"},
        {"max_off_diag", "0.1"}}},
      {"StalledTrainingRule",
       {{"threshold", "1800"},
        {"stop_training_on_fire", "False"},
        {"training_job_name_prefix", "None"}}},
      // Profiler rules: the defaults smdebug_rulesconfig sends (reference smdebug.md 5.3).
      {"CPUBottleneck",
       {{"threshold", "50"},
        {"gpu_threshold", "10"},
        {"cpu_threshold", "90"},
        {"patience", "1000"},
        {"scan_interval_us", "60000000"}}},
      {"IOBottleneck",
       {{"threshold", "50"},
        {"gpu_threshold", "10"},
        {"io_threshold", "50"},
        {"patience", "1000"},
        {"scan_interval_us", "60000000"}}},
      {"LowGPUUtilization",
       {{"threshold_p95", "70"},
        {"threshold_p5", "10"},
        {"window", "500"},
        {"patience", "1000"},
        {"scan_interval_us", "60000000"}}},
      {"BatchSize",
       {{"cpu_threshold_p95", "70"},
        {"gpu_threshold_p95", "70"},
        {"gpu_memory_threshold_p95", "70"},
        {"patience", "1000"},
        {"window", "500"},
        {"scan_interval_us", "60000000"}}},
      {"GPUMemoryIncrease",
       {{"increase", "5"},
        {"patience", "1000"},
        {"window", "10"},
        {"scan_interval_us", "60000000"}}},
      {"LoadBalancing",
       {{"threshold", "0.5"}, {"patience", "1000"}, {"scan_interval_us", "60000000"}}},
      {"MaxInitializationTime", {{"threshold", "20"}, {"scan_interval_us", "60000000"}}},
      {"StepOutlier",
       {{"stddev", "3"},
        {"mode", "None"},
        {"n_outliers", "10"},
        {"min_ratio", "2"},
        {"scan_interval_us", "60000000"}}},
      {"Dataloader",
       {{"min_threshold", "70"},
        {"max_threshold", "200"},
        {"patience", "10"},
        {"wait_threshold", "50"},
        {"scan_interval_us", "60000000"}}},
      {"OverallSystemUsage", {{"scan_interval_us", "60000000"}}},
      {"OverallFrameworkMetrics", {{"scan_interval_us", "60000000"}}},
      {"HostMemoryGrowth",
       {{"min_increase_mb", "200"},
        {"min_increase_percent", "10"},
        {"min_r2", "0.8"},
        {"warmup_seconds", "60"},
        {"patience", "20"}}},
  };
  std::vector<std::string> names = RuleNames();
  EXPECT_EQ(names.size(), expected.size());
  for (const auto& [rule, params] : expected) {
    auto info = DescribeRule(rule);
    ASSERT_TRUE(info.ok()) << rule;
    EXPECT_FALSE(info->summary.empty()) << rule;
    for (const auto& [name, def] : params) {
      auto it = std::find_if(info->params.begin(), info->params.end(),
                             [&](const ParamSpec& s) { return s.name == name; });
      ASSERT_NE(it, info->params.end()) << rule << " lacks parameter " << name;
      EXPECT_EQ(it->default_value, def) << rule << "." << name;
      EXPECT_FALSE(it->help.empty()) << rule << "." << name;
    }
  }
}

TEST(RuleRegistry, UnknownRuleListsTheKnownOnes) {
  auto r = CreateRule("VanishingGradients");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("known rules: AllZero, BatchSize, CPUBottleneck, "
                                      "CheckInputImages"),
            std::string::npos)
      << r.status().message();
}

TEST(RuleRegistry, EveryRuleRejectsUnknownParameters) {
  for (const auto& name : RuleNames()) {
    auto r = CreateRule(name, {{"no_such_parameter", "1"}});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.status().message().find("unknown parameter 'no_such_parameter' for rule " + name +
                                        "; valid parameters: "),
              std::string::npos)
        << r.status().message();
  }
}

TEST(RuleRegistry, RulesReportEffectiveParameters) {
  auto r = CreateRule("VanishingGradient", {{"threshold", "0.001"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->name(), "VanishingGradient");
  EXPECT_EQ((*r)->Parameters().at("threshold"), "0.001");
  auto d = CreateRule("DeadRelu");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->Parameters().at("threshold_layer"), "50.0");
}

TEST(RuleRegistry, RegisteredRulesCanBeCreatedByName) {
  class Custom : public Rule {
   public:
    Custom() : Rule("MyCustomRule") {}
    Result<Verdict> InvokeAtStep(int64_t) override { return Verdict::NotMet(); }
  };
  RuleInfo info;
  info.name = "MyCustomRule";
  info.summary = "test";
  RegisterRule(info, [](const RuleParams&) -> Result<std::unique_ptr<Rule>> {
    return std::unique_ptr<Rule>(new Custom);
  });
  auto r = CreateRule("MyCustomRule");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->name(), "MyCustomRule");
}

// The collections `trainscope run` must save for each rule with its defaults.
TEST(RuleCollections, DefaultRulesAskForWhatTheyRead) {
  auto need = [](const std::string& rule) {
    auto info = DescribeRule(rule);
    EXPECT_TRUE(info.ok()) << rule;
    std::map<std::string, CollectionRequest> by_name;
    for (const auto& r : info->default_collections) by_name[r.name] = r;
    return by_name;
  };
  auto vg = need("VanishingGradient");
  ASSERT_TRUE(vg.count("gradients"));
  EXPECT_EQ(vg["gradients"].reductions, (std::vector<std::string>{"abs_mean", "zero_fraction"}));
  EXPECT_FALSE(vg["gradients"].save_raw_tensor);
  EXPECT_TRUE(need("LossNotDecreasing").count("losses"));
  EXPECT_EQ(need("LossNotDecreasing")["losses"].save_interval, 1);
  EXPECT_TRUE(need("WeightUpdateRatio")["weights"].save_raw_tensor);
  EXPECT_EQ(need("DeadRelu")["relu_output"].include_regex.at(0),
            ".*relu\\w*_output|(^|\\.)act\\w*_output");
  auto pwi = need("PoorWeightInitialization");
  EXPECT_EQ(pwi["relu_input"].end_step, 10);
  EXPECT_EQ(pwi["initial_gradients"].end_step, 10);
  EXPECT_EQ(pwi["initial_gradients"].include_regex, (std::vector<std::string>{"^gradient/"}));
  EXPECT_FALSE(pwi.count("gradients"));
  EXPECT_TRUE(need("CheckInputImages").count("input_image"));
  EXPECT_TRUE(need("NLPSequenceRatio").count("input_sequence"));
  EXPECT_TRUE(need("ClassImbalance").count("labels"));
  EXPECT_TRUE(need("ClassImbalance").count("predictions"));
  // Rules that cannot run with defaults (a required parameter) list none.
  EXPECT_TRUE(DescribeRule("AllZero")->default_collections.empty());
  EXPECT_TRUE(DescribeRule("TensorVariance")->default_collections.empty());
  // With parameters, the selection becomes a collection.
  auto az = CreateRule("AllZero", {{"tensor_regex", "fc1"}, {"collection_names", "weights"}});
  ASSERT_TRUE(az.ok());
  auto reqs = (*az)->RequiredCollections();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].name, "weights");
  EXPECT_EQ(reqs[1].include_regex, (std::vector<std::string>{"fc1"}));
  EXPECT_EQ(reqs[1].reductions, (std::vector<std::string>{"zero_fraction"}));
}

// The debugging rules of the default set that read gradients: merged, they save the gradients
// raw on PoorWeightInitialization's first steps only, reductions on every later saved step (a
// large embedding's raw gradient every 10th step was most of a language model's trial).
TEST(RuleCollections, DefaultRulesSaveRawGradientsOnTheFirstStepsOnly) {
  std::vector<CollectionRequest> all;
  for (const char* rule : {"VanishingGradient", "ExplodingTensor", "WeightUpdateRatio",
                           "UnchangedTensor", "PoorWeightInitialization"}) {
    auto r = CreateRule(rule, {});
    ASSERT_TRUE(r.ok()) << rule;
    for (auto& c : (*r)->RequiredCollections()) all.push_back(std::move(c));
  }
  std::map<std::string, CollectionRequest> merged;
  for (auto& c : MergeCollectionRequests(all)) merged[c.name] = c;
  ASSERT_TRUE(merged.count("gradients"));
  EXPECT_FALSE(merged["gradients"].save_raw_tensor);
  EXPECT_EQ(merged["gradients"].save_interval, 10);
  EXPECT_TRUE(merged["gradients"].save_steps.empty());
  ASSERT_TRUE(merged.count("initial_gradients"));
  EXPECT_EQ(merged["initial_gradients"].end_step, 10);
  EXPECT_TRUE(merged["initial_gradients"].reductions.empty());  // the hook's default: raw
  // What the rules read of the later steps' gradients: VanishingGradient judges a sparse
  // gradient (an embedding's) on its non-zero part, which needs its zero share.
  for (const char* r : {"abs_mean", "zero_fraction", "max", "min"}) {
    const auto& red = merged["gradients"].reductions;
    EXPECT_NE(std::find(red.begin(), red.end(), r), red.end()) << r;
  }
  // Weights stay raw: WeightUpdateRatio and UnchangedTensor compare values across steps; in
  // training steps only, where they move (no rule of these reads them in EVAL steps).
  EXPECT_TRUE(merged["weights"].save_raw_tensor);
  EXPECT_TRUE(merged["weights"].train_only);
  auto json = nlohmann::json::parse(CollectionRequestsToHookJson(all));
  for (const auto& c : json) {
    const auto& p = c["CollectionParameters"];
    EXPECT_EQ(p.contains("eval.end_step"), c["CollectionName"] == "weights") << c.dump();
    if (c["CollectionName"] == "weights") {
      EXPECT_EQ(p["eval.end_step"], "0");
      EXPECT_EQ(p["predict.end_step"], "0");
    }
  }
  // A rule that reads weights in EVAL steps too keeps them there.
  CollectionRequest eval_too{"weights", {}, 10, 0, -1, {}, true, {}, false};
  all.push_back(eval_too);
  for (const auto& c : MergeCollectionRequests(all)) {
    if (c.name == "weights") {
      EXPECT_FALSE(c.train_only);
    }
  }
}

TEST(RuleCollections, MergeTakesTheUnion) {
  CollectionRequest a{"gradients", {}, 10, 0, -1, {"abs_mean"}, false};
  CollectionRequest b{"gradients", {"^gradient/fc"}, 5, 0, 10, {"max", "abs_mean"}, false};
  CollectionRequest c{"gradients", {}, 20, 0, -1, {}, true};
  auto m = MergeCollectionRequests({a, b, c});
  ASSERT_EQ(m.size(), 1u);
  // Every 10th step (a; c's every 20th is among them) and b's step 5, which they miss: not
  // every 5th step for the whole run.
  EXPECT_EQ(m[0].save_interval, 10);
  EXPECT_EQ(m[0].end_step, -1);
  EXPECT_EQ(m[0].save_steps, (std::vector<int64_t>{5}));
  EXPECT_TRUE(m[0].save_raw_tensor);
  EXPECT_EQ(m[0].reductions, (std::vector<std::string>{"abs_mean", "max"}));
  EXPECT_EQ(m[0].include_regex, (std::vector<std::string>{"^gradient/fc"}));

  auto json = nlohmann::json::parse(CollectionRequestsToHookJson({a, b}));
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["CollectionName"], "gradients");
  EXPECT_EQ(json[0]["CollectionParameters"]["save_interval"], "10");
  EXPECT_EQ(json[0]["CollectionParameters"]["save_steps"], "5");
  EXPECT_FALSE(json[0]["CollectionParameters"].contains("end_step"));  // a has none
  auto only_b = nlohmann::json::parse(CollectionRequestsToHookJson({b}));
  EXPECT_EQ(only_b[0]["CollectionParameters"]["end_step"], "10");
  EXPECT_EQ(only_b[0]["CollectionParameters"]["include_regex"], "^gradient/fc");
  EXPECT_EQ(json[0]["CollectionParameters"]["reductions"], "abs_mean,max");
  EXPECT_EQ(json[0]["CollectionParameters"]["save_raw_tensor"], "false");
}

// The merged schedule saves exactly the union of the requests' steps (as the hook's
// SaveConfigMode judges them) wherever that fits in save_steps, and a superset otherwise.
TEST(RuleCollections, MergedScheduleIsTheUnionOfTheSteps) {
  auto saves = [](const CollectionRequest& r, int64_t s) {
    SaveConfigMode m;
    m.save_interval = r.save_interval;
    m.start_step = r.start_step;
    if (r.end_step >= 0) m.end_step = r.end_step;
    m.save_steps = r.save_steps;
    return m.ShouldSave(s);
  };
  // PoorWeightInitialization (every step before step 10) beside the other default rules
  // (every 10th step): steps 0-9, then every 10th; was every step of the whole run.
  CollectionRequest every10{"gradients", {}, 10, 0, -1, {"abs_mean"}, false};
  CollectionRequest first10{"gradients", {}, 1, 0, 10, {}, true};
  CollectionRequest every25{"gradients", {}, 25, 0, -1, {}, false};
  CollectionRequest late{"gradients", {}, 3, 100, 130, {}, false};
  CollectionRequest huge{"gradients", {}, 1, 0, 1000000, {}, false};
  const std::vector<std::vector<CollectionRequest>> cases = {
      {every10, first10}, {first10, every10}, {every10, every25}, {every10, first10, late},
      {first10, late},    {every10, huge},    {first10}};
  for (const auto& c : cases) {
    auto m = MergeCollectionRequests(c);
    ASSERT_EQ(m.size(), 1u);
    bool exact = true;
    for (int64_t s = 0; s < 2000; ++s) {
      bool wanted = false;
      for (const auto& r : c) wanted = wanted || saves(r, s);
      EXPECT_TRUE(!wanted || saves(m[0], s))
          << "step " << s << " lost: " << DescribeSaveSchedule(m[0]);
      exact = exact && wanted == saves(m[0], s);
    }
    if (&c == &cases[0] || &c == &cases[1] || &c == &cases[3]) {
      EXPECT_TRUE(exact) << DescribeSaveSchedule(m[0]);
    }
  }
  auto m = MergeCollectionRequests({every10, first10});
  EXPECT_EQ(m[0].save_interval, 10);
  EXPECT_EQ(m[0].save_steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(m[0].save_raw_tensor);
  EXPECT_EQ(DescribeSaveSchedule(m[0]), "every 10 steps, and steps 1-9");
  // 10 and 25: every 5th step (their common divisor), not every 10th (which misses 25).
  EXPECT_EQ(MergeCollectionRequests({every10, every25})[0].save_interval, 5);
  // Past kMaxMergedSaveSteps listed steps: the smallest interval over the widest range.
  auto wide = MergeCollectionRequests({every10, huge})[0];
  EXPECT_EQ(wide.save_interval, 1);
  EXPECT_EQ(wide.end_step, -1);
  EXPECT_TRUE(wide.save_steps.empty());
}

TEST(RuleFindingJson, RoundTripsWithNonFiniteNumbers) {
  RuleFinding f;
  f.rule = "ExplodingTensor";
  f.step = 12;
  f.mode = Mode::kTrain;
  f.mode_step = 10;
  f.tensor = "gradient/fc1.weight";
  f.value = NAN;
  f.threshold = -INFINITY;
  f.condition = "nan_count > 0";
  f.explanation = "has NaN \"quoted\"";
  f.recommendation = "lower the learning rate";
  f.trial = "/tmp/t";
  f.stop_training = true;
  f.time_micros = 1700000000123456;
  const std::string json = RuleFindingToJson(f);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["kind"], "finding");
  EXPECT_EQ(j["status"], "IssuesFound");
  EXPECT_EQ(j["value"], "NaN");
  EXPECT_EQ(j["threshold"], "-Infinity");
  EXPECT_EQ(j["mode"], "TRAIN");
  EXPECT_EQ(j["time"], "2023-11-14T22:13:20.123456Z");
  auto back = RuleFindingFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rule, f.rule);
  EXPECT_EQ(back->step, 12);
  EXPECT_EQ(back->mode, Mode::kTrain);
  EXPECT_EQ(back->mode_step, 10);
  EXPECT_TRUE(std::isnan(*back->value));
  EXPECT_EQ(*back->threshold, -INFINITY);
  EXPECT_EQ(back->explanation, f.explanation);
  EXPECT_TRUE(back->stop_training);
  EXPECT_EQ(back->time_micros, f.time_micros);
  EXPECT_FALSE(RuleFindingFromJson("{\"step\": 1}").ok());
  EXPECT_FALSE(RuleFindingFromJson("{\"rule\": \"X\", \"step\": \"one\"}").ok());
  EXPECT_FALSE(RuleFindingFromJson("not json").ok());
}

TEST(RuleStatusNames, AreSageMakers) {
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kInProgress), "InProgress");
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kIssuesFound), "IssuesFound");
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kNoIssuesFound), "NoIssuesFound");
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kError), "Error");
  EXPECT_EQ(RuleEvaluationStatusName(RuleEvaluationStatus::kStopped), "Stopped");
  EXPECT_EQ(RuleEvaluationStatusFromName("issuesfound"), RuleEvaluationStatus::kIssuesFound);
  EXPECT_FALSE(RuleEvaluationStatusFromName("Stopping").has_value());
}

}  // namespace
}  // namespace trainscope
