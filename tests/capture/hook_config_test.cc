#include "trainscope/hook_config.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace trainscope {
namespace {

TEST(HookConfigJsonTest, ParsesSmdebugExampleWithStringValues) {
  const char* json = R"({
    "LocalPath": "/tmp/out",
    "S3OutputPath": "s3://bucket/prefix",
    "HookParameters": {
      "export_tensorboard": "true", "tensorboard_dir": "/tmp/tb", "save_all": "false",
      "include_regex": "regex1, regex2", "save_interval": "100", "save_steps": "1,2,3",
      "start_step": "1", "reductions": "min,max,abs_l2_norm", "save_raw_tensor": "true",
      "include_workers": "all", "train.save_interval": "10", "eval.end_step": "50"
    },
    "CollectionConfigurations": [
      {"CollectionName": "weights",
       "CollectionParameters": {"save_histogram": "false", "eval.save_interval": "5"}},
      {"CollectionName": "custom",
       "CollectionParameters": {"include_regex": "relu|tanh", "reductions": "mean",
                                "save_interval": 7, "predict.save_steps": [4, 8]}}
    ]})";
  auto c = ParseHookConfigJson(json, "cfg.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->out_dir, "/tmp/out");
  EXPECT_TRUE(c->export_tensorboard);
  EXPECT_EQ(c->tensorboard_dir, "/tmp/tb");
  EXPECT_FALSE(c->save_all);
  EXPECT_EQ(c->include_regex, (std::vector<std::string>{"regex1", "regex2"}));
  EXPECT_EQ(c->include_workers, IncludeWorkers::kAll);
  EXPECT_TRUE(c->warnings.empty());

  // Hook save config: mode-prefixed keys override the unprefixed ones for their mode.
  ASSERT_TRUE(c->save_config.complete());
  EXPECT_EQ(c->save_config.mode(Mode::kTrain)->save_interval, 10);
  EXPECT_EQ(c->save_config.mode(Mode::kEval)->save_interval, 100);
  EXPECT_EQ(c->save_config.mode(Mode::kEval)->end_step, 50);
  EXPECT_EQ(c->save_config.mode(Mode::kGlobal)->save_interval, 100);
  EXPECT_EQ(c->save_config.mode(Mode::kGlobal)->start_step, 1);
  EXPECT_EQ(c->save_config.mode(Mode::kPredict)->save_steps, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(c->save_config.mode(Mode::kTrain)->end_step.has_value());

  // Hook reductions: save_raw_tensor counts because "reductions" is in the same block.
  EXPECT_EQ(c->reduction_config.ReductionsString(), "min,max,abs_l2_norm");
  EXPECT_TRUE(c->reduction_config.save_raw_tensor);

  // Collections: listed names become include_collections.
  ASSERT_TRUE(c->include_collections.has_value());
  EXPECT_EQ(*c->include_collections, (std::vector<std::string>{"weights", "custom"}));
  auto w = c->collections.Get("weights");
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->save_histogram());
  EXPECT_EQ(w->include_regex(), std::vector<std::string>{"^(?!gradient).*weight"});
  // The collection's save parameters override the hook's, per mode.
  EXPECT_EQ(w->save_config()->mode(Mode::kEval)->save_interval, 5);
  EXPECT_EQ(w->save_config()->mode(Mode::kEval)->end_step, 50);
  EXPECT_EQ(w->save_config()->mode(Mode::kTrain)->save_interval, 10);
  EXPECT_FALSE(w->reduction_config().has_value());  // no "reductions": the hook's default later

  auto custom = c->collections.Get("custom");
  ASSERT_TRUE(custom);
  EXPECT_EQ(custom->include_regex(), std::vector<std::string>{"relu|tanh"});
  EXPECT_TRUE(custom->Matches("layer.relu_output_0"));
  EXPECT_EQ(custom->reduction_config()->ReductionsString(), "mean");
  EXPECT_FALSE(custom->reduction_config()->save_raw_tensor);  // smdebug's from_dict default
  // The collection's unprefixed save_interval beats the hook's train.save_interval.
  EXPECT_EQ(custom->save_config()->mode(Mode::kTrain)->save_interval, 7);
  EXPECT_EQ(custom->save_config()->mode(Mode::kPredict)->save_steps, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(custom->save_config()->mode(Mode::kEval)->save_steps, (std::vector<int64_t>{1, 2, 3}));
}

TEST(HookConfigJsonTest, DefaultsWithoutHookParameters) {
  auto c = ParseHookConfigJson(R"({"LocalPath": "/x"})");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->reduction_config.save_raw_tensor);  // ReductionConfig(save_raw_tensor=True)
  EXPECT_FALSE(c->reduction_config.has_reductions());
  EXPECT_EQ(c->save_config.mode(Mode::kTrain)->save_interval, 500);
  EXPECT_FALSE(c->include_collections.has_value());
  EXPECT_EQ(c->include_workers, IncludeWorkers::kOne);
}

TEST(HookConfigJsonTest, SyntaxErrorsGiveLineAndColumn) {
  auto c = ParseHookConfigJson("{\n  \"LocalPath\": \"/x\",\n  \"HookParameters\": {\"a\": 1,}\n}",
                               "cfg.json");
  ASSERT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      c.status().message().find("cfg.json: not valid JSON at line 3, column 29: syntax error"),
      std::string::npos)
      << c.status().message();
  auto d = ParseHookConfigJson("", "empty.json");
  EXPECT_NE(d.status().message().find("empty.json: not valid JSON at line 1, column 1"),
            std::string::npos)
      << d.status().message();
  // Valid JSON of the wrong shape keeps its own message.
  auto e = ParseHookConfigJson("[1]", "list.json");
  EXPECT_NE(e.status().message().find("list.json: not a JSON object"), std::string::npos);
}

TEST(HookConfigJsonTest, NoLocalPathMeansSageMakersFolderOnlyInsideASageMakerJob) {
  unsetenv("TRAINING_JOB_NAME");
  auto no_path = ParseHookConfigJson("{}");
  ASSERT_TRUE(no_path.ok());
  EXPECT_EQ(no_path->out_dir, "");
  auto env = NewMemEnv();
  ASSERT_TRUE(env->CreateDirs("/cfg").ok());
  ASSERT_TRUE(env->WriteFileAtomic("/cfg/empty.json", "{}", false).ok());
  auto refused = LoadHookConfigFile("/cfg/empty.json", env.get());
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  for (const char* w : {"/cfg/empty.json", "LocalPath", "TRAINSCOPE_CONFIG",
                        "/opt/ml/output/tensors", "TRAINING_JOB_NAME"}) {
    EXPECT_NE(refused.status().message().find(w), std::string::npos) << w;
  }
  setenv("TRAINING_JOB_NAME", "job-1", 1);
  auto on_sagemaker = LoadHookConfigFile("/cfg/empty.json", env.get());
  unsetenv("TRAINING_JOB_NAME");
  ASSERT_TRUE(on_sagemaker.ok()) << on_sagemaker.status().ToString();
  EXPECT_EQ(on_sagemaker->out_dir, "/opt/ml/output/tensors");
}

// smdebug's create_hook_from_json_config: inside a SageMaker job TensorBoard goes to the
// LocalPath of SageMaker's TensorBoard configuration, exactly when that file exists; outside one,
// the hook parameters decide.
TEST(HookConfigJsonTest, SageMakersTensorboardConfigurationDecidesInsideAJob) {
  auto env = NewMemEnv();
  ASSERT_TRUE(env->CreateDirs("/cfg").ok());
  ASSERT_TRUE(env->WriteFileAtomic("/cfg/hook.json", R"({"LocalPath": "/out", "HookParameters":
      {"export_tensorboard": "true", "tensorboard_dir": "/mine"}})",
                                   false)
                  .ok());
  ASSERT_TRUE(env->WriteFileAtomic("/cfg/tb.json", R"({"LocalPath": "/opt/ml/tb"})", false).ok());
  ASSERT_TRUE(env->WriteFileAtomic("/cfg/tb_bad.json", R"({"Path": 3})", false).ok());
  unsetenv("TRAINING_JOB_NAME");
  setenv("TENSORBOARD_CONFIG_FILE_PATH", "/cfg/tb.json", 1);
  auto outside = LoadHookConfigFile("/cfg/hook.json", env.get());
  ASSERT_TRUE(outside.ok()) << outside.status().ToString();
  EXPECT_TRUE(outside->export_tensorboard);
  EXPECT_EQ(outside->tensorboard_dir, "/mine");

  setenv("TRAINING_JOB_NAME", "job-1", 1);
  auto inside = LoadHookConfigFile("/cfg/hook.json", env.get());
  ASSERT_TRUE(inside.ok()) << inside.status().ToString();
  EXPECT_TRUE(inside->export_tensorboard);
  EXPECT_EQ(inside->tensorboard_dir, "/opt/ml/tb");

  setenv("TENSORBOARD_CONFIG_FILE_PATH", "/cfg/none.json", 1);
  auto without = LoadHookConfigFile("/cfg/hook.json", env.get());
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(without->export_tensorboard);  // no file: no TensorBoard, as smdebug
  EXPECT_EQ(without->tensorboard_dir, "");

  setenv("TENSORBOARD_CONFIG_FILE_PATH", "/cfg/tb_bad.json", 1);
  auto bad = LoadHookConfigFile("/cfg/hook.json", env.get());
  unsetenv("TRAINING_JOB_NAME");
  unsetenv("TENSORBOARD_CONFIG_FILE_PATH");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->export_tensorboard);
  ASSERT_EQ(bad->warnings.size(), 1u);
  EXPECT_NE(bad->warnings[0].find("/cfg/tb_bad.json"), std::string::npos) << bad->warnings[0];
}

TEST(HookConfigJsonTest, CollectionWithoutRegexIsIncludedAndJudgedAtTheFirstStep) {
  auto c = ParseHookConfigJson(R"({"LocalPath": "/x",
      "CollectionConfigurations": [{"CollectionName": "mine"}]})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->include_collections.has_value());
  EXPECT_EQ(*c->include_collections, std::vector<std::string>{"mine"});
  ASSERT_NE(c->collections.Get("mine"), nullptr);
  EXPECT_TRUE(c->collections.Get("mine")->empty());
}

TEST(HookConfigJsonTest, ReductionsWithoutSaveRawTensorSaveNoRaw) {
  auto c = ParseHookConfigJson(R"({"HookParameters": {"reductions": "mean"}})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->reduction_config.save_raw_tensor);
  // save_raw_tensor alone (without "reductions") is ignored, as in smdebug.
  auto d = ParseHookConfigJson(R"({"HookParameters": {"save_raw_tensor": "false"}})");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->reduction_config.save_raw_tensor);
}

TEST(HookConfigJsonTest, EndStepNoneMeansNoEnd) {
  auto c = ParseHookConfigJson(R"({"HookParameters": {"end_step": "None", "train.end_step": 5}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->save_config.mode(Mode::kEval)->end_step.has_value());
  EXPECT_EQ(c->save_config.mode(Mode::kTrain)->end_step, 5);
}

struct BadCase {
  const char* json;
  const char* expected;  // substrings of the message
  const char* expected2;
};

class HookConfigBadValuesTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(HookConfigBadValuesTest, FailsWithAMessageThatSaysWhatToChange) {
  auto c = ParseHookConfigJson(GetParam().json, "cfg.json");
  ASSERT_FALSE(c.ok()) << GetParam().json;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(GetParam().expected), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find(GetParam().expected2), std::string::npos)
      << c.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    All, HookConfigBadValuesTest,
    ::testing::Values(
        BadCase{"not json", "cfg.json: not valid JSON at line 1, column 2", "invalid literal"},
        BadCase{"[1, 2]", "cfg.json", "not a JSON object"},
        BadCase{R"({"HookParameters": {"save_interval": "ten"}})", "HookParameters.save_interval",
                "not a whole number"},
        BadCase{R"({"HookParameters": {"save_interval": "-3"}})", "save_interval is -3", ">= 1"},
        BadCase{R"({"HookParameters": {"eval.save_interval": "0"}})", "mode EVAL",
                "save_interval is 0"},
        BadCase{R"({"HookParameters": {"reductions": "mean,meen"}})", "unknown reduction 'meen'",
                "use one of"},
        BadCase{R"({"HookParameters": {"save_all": "yes"}})", "save_all", "true or false"},
        BadCase{R"({"HookParameters": {"include_workers": "some"}})", "include_workers", "\"one\""},
        BadCase{R"({"HookParameters": {"save_steps": "1,x"}})", "save_steps", "not a whole number"},
        BadCase{R"({"CollectionConfigurations": [{"CollectionParameters": {}}]})",
                "CollectionConfigurations[0]", "CollectionName"},
        BadCase{R"({"CollectionConfigurations": [{"CollectionName": "c",
                   "CollectionParameters": {"include_regex": "a(b"}}]})",
                "collection 'c'", "not a valid regular expression"},
        BadCase{R"({"CollectionConfigurations": [{"CollectionName": "weights",
                   "CollectionParameters": {"start_step": "-1"}}]})",
                "collection 'weights'", "start_step is -1"}));

TEST(HookConfigJsonTest, UnknownKeysAreWarnings) {
  auto c = ParseHookConfigJson(R"({"HookParameters": {"save_intervl": "5"},
      "CollectionConfigurations": [{"CollectionName": "weights",
                                    "CollectionParameters": {"save_histogramm": "true"}}]})");
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->warnings.size(), 2u);
  EXPECT_NE(c->warnings[0].find("'save_intervl'"), std::string::npos);
  EXPECT_NE(c->warnings[1].find("'save_histogramm'"), std::string::npos);
}

TEST(HookConfigJsonTest, PathFromEnvironmentPrefersTrainscopeConfig) {
  unsetenv("TRAINSCOPE_CONFIG");
  unsetenv("SMDEBUG_CONFIG_FILE_PATH");
  EXPECT_EQ(HookConfigPathFromEnv(), "/opt/ml/input/config/debughookconfig.json");
  setenv("SMDEBUG_CONFIG_FILE_PATH", "/a.json", 1);
  EXPECT_EQ(HookConfigPathFromEnv(), "/a.json");
  setenv("TRAINSCOPE_CONFIG", "/b.json", 1);
  EXPECT_EQ(HookConfigPathFromEnv(), "/b.json");
  unsetenv("TRAINSCOPE_CONFIG");
  unsetenv("SMDEBUG_CONFIG_FILE_PATH");
}

TEST(HookConfigJsonTest, LoadFileFromMemEnv) {
  auto env = NewMemEnv();
  ASSERT_TRUE(env->CreateDirs("/cfg").ok());
  ASSERT_TRUE(env->WriteFileAtomic("/cfg/hook.json",
                                   R"({"LocalPath": "/t", "HookParameters": {"save_interval": 3}})",
                                   false)
                  .ok());
  auto c = LoadHookConfigFile("/cfg/hook.json", env.get());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->save_config.mode(Mode::kTrain)->save_interval, 3);
  EXPECT_EQ(c->env, env.get());
  auto missing = LoadHookConfigFile("/cfg/none.json", env.get());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("TRAINSCOPE_CONFIG"), std::string::npos);
}

}  // namespace
}  // namespace trainscope
