// Collections files: parsed as smdebug writes them; anything else is Corruption, never a throw.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "store/collections_reader.h"
#include "trial_test_util.h"

namespace trainscope {
namespace {

TEST(CollectionsReaderTest, ParsesSmdebugCollections) {
  auto c = ParseCollectionsFile(testing::CollectionsJson(3), "c.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_workers, 3);
  ASSERT_EQ(c->collections.size(), 2u);
  EXPECT_EQ(c->collections[0].name, "losses");  // sorted by name
  EXPECT_EQ(c->collections[0].tensor_names, (std::vector<std::string>{"loss"}));
  EXPECT_EQ(c->collections[0].reduction_config_json,
            R"({"reductions":"mean","save_raw_tensor":true})");
  EXPECT_EQ(c->collections[0].save_config_json, "null");
  EXPECT_FALSE(c->collections[0].save_histogram);
  EXPECT_EQ(c->collections[1].include_regex, (std::vector<std::string>{"weight"}));
  // No _meta: one worker (smdebug's default).
  auto d = ParseCollectionsFile(R"({"collections": {}})", "d.json");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->num_workers, 1);
  EXPECT_TRUE(d->collections.empty());
}

TEST(CollectionsReaderTest, ParsesParametersMetadata) {
  // trainscope's hooks add _meta.parameters (trial.md); smdebug's files have none.
  auto c = ParseCollectionsFile(
      R"({"collections": {}, "_meta": {"num_workers": 1, "parameters": )"
      R"({"trainable": ["Net_fc.weight", "Net_fc.bias"], "frozen": ["Net_emb.weight"]}}})",
      "c.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->parameters,
            (std::map<std::string, bool>{
                {"Net_emb.weight", false}, {"Net_fc.bias", true}, {"Net_fc.weight", true}}));
  auto none = ParseCollectionsFile(testing::CollectionsJson(1), "d.json");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->parameters.empty());
}

TEST(CollectionsReaderTest, TrialAnswersParameterTrainable) {
  auto env = NewMemEnv();
  testing::PutFile(env.get(), "/t/collections/000000000/worker_0_collections.json",
                   R"({"collections": {}, "_meta": {"num_workers": 1, "parameters": )"
                   R"({"trainable": ["Net_fc.weight"], "frozen": ["Net_emb.weight"]}}})");
  TrialOptions o;
  o.env = env.get();
  auto t = Trial::Open("/t", o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE((*t)->records_parameters());
  EXPECT_EQ((*t)->ParameterTrainable("Net_fc.weight"), std::optional<bool>(true));
  EXPECT_EQ((*t)->ParameterTrainable("Net_emb.weight"), std::optional<bool>(false));
  EXPECT_EQ((*t)->ParameterTrainable("loss_output_0"), std::nullopt);
}

TEST(CollectionsReaderTest, TrialAnswersModulesInForwardOrder) {
  auto env = NewMemEnv();
  testing::PutFile(
      env.get(), "/t/collections/000000000/worker_0_collections.json",
      R"({"collections": {}, "_meta": {"num_workers": 1, "modules": [)"
      R"({"name": "encoder.1", "type": "ReLU"}, {"name": "decoder.1", "type": "ReLU"},)"
      R"({"name": "AutoEncoder", "type": "AutoEncoder"}]}})");
  testing::PutFile(env.get(), "/s/collections/000000000/worker_0_collections.json",
                   testing::CollectionsJson(1));
  TrialOptions o;
  o.env = env.get();
  auto t = Trial::Open("/t", o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const auto& m = (*t)->modules();
  ASSERT_EQ(m.size(), 3u);  // the file's order, not sorted
  EXPECT_EQ(m[0].name, "encoder.1");
  EXPECT_EQ(m[1].name, "decoder.1");
  EXPECT_EQ(m[1].type, "ReLU");
  EXPECT_EQ(m[2].type, "AutoEncoder");
  auto smdebug = Trial::Open("/s", o);  // smdebug's files record none
  ASSERT_TRUE(smdebug.ok()) << smdebug.status().ToString();
  EXPECT_TRUE((*smdebug)->modules().empty());
  EXPECT_TRUE((*smdebug)->environments().empty());
  EXPECT_TRUE((*t)->environments().empty());
}

TEST(CollectionsReaderTest, TrialAnswersTheReinforcementLearningLibraries) {
  auto env = NewMemEnv();
  testing::PutFile(env.get(), "/t/collections/000000000/worker_0_collections.json",
                   R"({"collections": {}, "_meta": {"environments": ["gym", "gymnasium"]}})");
  TrialOptions o;
  o.env = env.get();
  auto t = Trial::Open("/t", o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->environments(), (std::vector<std::string>{"gym", "gymnasium"}));
}

TEST(CollectionsReaderTest, DamagedFilesAreCorruption) {
  for (const char* text :
       {"", "{", "[]", R"({"collections": []})", R"({"_meta": {"num_workers": 2}})",
        R"({"collections": {}, "_meta": {"num_workers": 0}})",
        R"({"collections": {}, "_meta": {"num_workers": "2"}})",
        R"({"collections": {"a": {"tensor_names": [1]}}})", R"({"collections": {"a": 3e3631}})",
        R"({"collections": {}, "_meta": {"parameters": []}})",
        R"({"collections": {}, "_meta": {"parameters": {"frozen": [1]}}})",
        R"({"collections": {}, "_meta": {"modules": {"name": "a", "type": "ReLU"}}})",
        R"({"collections": {}, "_meta": {"modules": ["a"]}})",
        R"({"collections": {}, "_meta": {"modules": [{"name": "a"}]}})",
        R"({"collections": {}, "_meta": {"modules": [{"name": "a", "type": 3}]}})",
        R"({"collections": {}, "_meta": {"environments": {"gymnasium": 1}}})",
        R"({"collections": {}, "_meta": {"environments": [1]}})"}) {
    auto c = ParseCollectionsFile(text, "bad.json");
    EXPECT_EQ(c.status().code(), StatusCode::kCorruption) << text;
    EXPECT_NE(c.status().message().find("bad.json"), std::string::npos) << text;
  }
}

TEST(CollectionsReaderTest, FindsEveryWorkersFile) {
  auto env = NewMemEnv();
  testing::PutFile(env.get(), "/t/collections/000000000/worker_1_collections.json", "{}");
  testing::PutFile(env.get(), "/t/collections/000000000/worker_0_collections.json", "{}");
  testing::PutFile(env.get(), "/t/collections/000000000/worker_2_collections.json.tmp", "{");
  auto l = FindCollectionsFiles(env.get(), "/t");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->workers, (std::vector<std::string>{"worker_0", "worker_1"}));
  auto none = FindCollectionsFiles(env.get(), "/nothing");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->paths.empty());
}

}  // namespace
}  // namespace trainscope
