#include "trainscope/collection.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace trainscope {
namespace {

TEST(CollectionTest, BuiltInRegexesMatchSmdebugNames) {
  auto cm = CollectionManager::WithPyTorchDefaults();
  auto weights = cm.Get("weights");
  auto biases = cm.Get("biases");
  auto gradients = cm.Get("gradients");
  auto losses = cm.Get("losses");
  ASSERT_TRUE(weights && biases && gradients && losses && cm.Get("all") && cm.Get("default"));

  EXPECT_TRUE(weights->Matches("Net_fc1.weight"));
  EXPECT_TRUE(weights->Matches("Sequential_0.weight"));
  EXPECT_FALSE(weights->Matches("gradient/Net_fc1.weight"));  // the (?!gradient) lookahead
  EXPECT_FALSE(weights->Matches("Net_fc1.bias"));
  EXPECT_TRUE(biases->Matches("Net_fc1.bias"));
  EXPECT_FALSE(biases->Matches("gradient/Net_fc1.bias"));
  EXPECT_TRUE(gradients->Matches("gradient/Net_fc1.weight"));
  EXPECT_FALSE(gradients->Matches("Net_fc1.weight"));
  EXPECT_TRUE(losses->Matches("CrossEntropyLoss_output_0"));
  EXPECT_TRUE(losses->Matches("MSELoss_output_0"));
  EXPECT_FALSE(losses->Matches("CrossEntropyLoss_input_0"));
  EXPECT_FALSE(losses->Matches("relu_output_0"));
  EXPECT_TRUE(cm.Get("all")->empty());  // ".*" only with save_all
}

TEST(CollectionTest, MatchingIsASearchAnywhereInTheName) {
  Collection c("relus");
  ASSERT_TRUE(c.Include("relu").ok());
  EXPECT_TRUE(c.Matches("layer1.relu_output_0"));
  EXPECT_FALSE(c.Matches("fc1_output_0"));
  c.AddTensorName("exact_name");
  EXPECT_TRUE(c.Matches("exact_name"));
  EXPECT_FALSE(c.Matches("exact_nam"));
}

TEST(CollectionTest, BadRegexIsRejectedWithTheCollectionAndRegex) {
  Collection c("custom");
  Status s = c.Include("fc[1");
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("collection 'custom'"), std::string::npos);
  EXPECT_NE(s.message().find("'fc[1'"), std::string::npos);
  EXPECT_TRUE(c.include_regex().empty());
  // SetIncludeRegex is all or nothing.
  ASSERT_TRUE(c.Include("ok").ok());
  EXPECT_FALSE(c.SetIncludeRegex({"fine", "(unclosed"}).ok());
  EXPECT_EQ(c.include_regex(), std::vector<std::string>{"ok"});
}

TEST(CollectionTest, VersionChangesOnEveryMutation) {
  CollectionManager cm;
  auto c = cm.GetOrCreate("x");
  uint64_t v = cm.version();
  ASSERT_TRUE(c->Include("a").ok());
  EXPECT_NE(cm.version(), v);
  v = cm.version();
  c->set_save_histogram(false);
  EXPECT_NE(cm.version(), v);
  v = cm.version();
  cm.GetOrCreate("y");
  EXPECT_NE(cm.version(), v);
  v = cm.version();
  cm.GetOrCreate("y");  // exists: no change
  EXPECT_EQ(cm.version(), v);
}

TEST(CollectionTest, ScalarCollectionClasses) {
  EXPECT_TRUE(IsScalarCollection("losses"));
  EXPECT_TRUE(IsScalarCollection("metrics"));
  EXPECT_FALSE(IsScalarCollection("weights"));
  EXPECT_TRUE(IsNonReductionCollection("tensorflow_summaries"));
  EXPECT_TRUE(IsTrainOnlyCollection("gradients"));
  EXPECT_TRUE(IsTrainOnlyCollection("optimizer_variables"));
  EXPECT_FALSE(IsTrainOnlyCollection("weights"));
}

TEST(CollectionTest, JsonHasSmdebugSchema) {
  auto cm = CollectionManager::WithPyTorchDefaults();
  auto w = cm.Get("weights");
  w->AddTensorName("Net_fc2.weight");
  w->AddTensorName("Net_fc1.weight");
  ASSERT_TRUE(w->set_reduction_config(*ReductionConfig::Parse("mean,l2_norm,abs_max", true)).ok());
  SaveConfig sc(SaveConfigMode{.save_interval = 2});
  sc.set_mode(Mode::kEval, SaveConfigMode{.save_interval = 3, .end_step = 10, .save_steps = {1}});
  ASSERT_TRUE(w->set_save_config(sc).ok());

  auto j = nlohmann::json::parse(cm.ToJson(3));
  ASSERT_TRUE(j.contains("collections"));
  EXPECT_EQ(j["_meta"]["num_workers"], 3);
  const auto& wj = j["collections"]["weights"];
  EXPECT_EQ(wj["name"], "weights");
  EXPECT_EQ(wj["include_regex"], nlohmann::json::array({"^(?!gradient).*weight"}));
  EXPECT_EQ(wj["tensor_names"], nlohmann::json::array({"Net_fc1.weight", "Net_fc2.weight"}));
  EXPECT_EQ(wj["reduction_config"]["reductions"], "mean,l2_norm,abs_max");
  EXPECT_EQ(wj["reduction_config"]["save_raw_tensor"], true);
  EXPECT_EQ(wj["reduction_config"]["save_shape"], false);
  EXPECT_EQ(wj["save_config"]["TRAIN"]["save_interval"], 2);
  EXPECT_TRUE(wj["save_config"]["TRAIN"]["end_step"].is_null());
  EXPECT_EQ(wj["save_config"]["EVAL"]["end_step"], 10);
  EXPECT_EQ(wj["save_config"]["EVAL"]["save_steps"], nlohmann::json::array({1}));
  EXPECT_EQ(wj["save_config"]["GLOBAL"]["start_step"], 0);
  EXPECT_EQ(wj["save_histogram"], true);
  // Unconfigured collections have null configs, as smdebug writes them before preparing.
  EXPECT_TRUE(j["collections"]["biases"]["reduction_config"].is_null());
  EXPECT_TRUE(j["collections"]["biases"]["save_config"].is_null());
  EXPECT_EQ(j["collections"].size(), 6u);
}

TEST(CollectionTest, JsonRecordsParameters) {
  auto cm = CollectionManager::WithPyTorchDefaults();
  EXPECT_FALSE(nlohmann::json::parse(cm.ToJson(1))["_meta"].contains("parameters"));
  const uint64_t v = cm.version();
  cm.SetParameterTrainable("Net_fc.weight", true);
  cm.SetParameterTrainable("Net_emb.weight", true);
  cm.SetParameterTrainable("Net_emb.weight", false);  // the last call wins
  EXPECT_NE(cm.version(), v);
  auto j = nlohmann::json::parse(cm.ToJson(1));
  EXPECT_EQ(j["_meta"]["num_workers"], 1);
  EXPECT_EQ(j["_meta"]["parameters"]["trainable"], nlohmann::json::array({"Net_fc.weight"}));
  EXPECT_EQ(j["_meta"]["parameters"]["frozen"], nlohmann::json::array({"Net_emb.weight"}));
}

TEST(CollectionTest, JsonRecordsReinforcementLearningLibraries) {
  auto cm = CollectionManager::WithPyTorchDefaults();
  EXPECT_FALSE(nlohmann::json::parse(cm.ToJson(1))["_meta"].contains("environments"));
  const uint64_t v = cm.version();
  cm.SetEnvironments({"gymnasium", "stable_baselines3"});
  EXPECT_NE(cm.version(), v);
  EXPECT_EQ(nlohmann::json::parse(cm.ToJson(1))["_meta"]["environments"],
            nlohmann::json::array({"gymnasium", "stable_baselines3"}));
  cm.SetEnvironments({});
  EXPECT_FALSE(nlohmann::json::parse(cm.ToJson(1))["_meta"].contains("environments"));
}

TEST(CollectionTest, JsonRecordsModuleOrder) {
  auto cm = CollectionManager::WithPyTorchDefaults();
  EXPECT_FALSE(nlohmann::json::parse(cm.ToJson(1))["_meta"].contains("modules"));
  const uint64_t v = cm.version();
  cm.SetModuleOrder({{"fc2", "Linear"}, {"fc1", "Linear"}, {"Net", "Net"}});
  EXPECT_NE(cm.version(), v);
  auto j = nlohmann::json::parse(cm.ToJson(1));
  EXPECT_EQ(j["_meta"]["modules"], nlohmann::json::parse(R"([{"name": "fc2", "type": "Linear"},
      {"name": "fc1", "type": "Linear"}, {"name": "Net", "type": "Net"}])"));
}

TEST(CollectionTest, AddReplacesInPlace) {
  auto cm = CollectionManager::WithPyTorchDefaults();
  auto mine = std::make_shared<Collection>("weights");
  ASSERT_TRUE(mine->Include("only_this").ok());
  cm.Add(mine);
  EXPECT_EQ(cm.Get("weights")->include_regex(), std::vector<std::string>{"only_this"});
  EXPECT_EQ(cm.collections().size(), 6u);
  EXPECT_TRUE(CollectionManager::IsBuiltIn("losses"));
  EXPECT_FALSE(CollectionManager::IsBuiltIn("outputs"));
}

}  // namespace
}  // namespace trainscope
