// The closure record of a step (index meta.closure_evaluations, docs/formats/index.md): encoded
// after smdebug's keys, parsed strictly, left to the full parser by the fast one, written by
// TrialWriter (with and without the journal) and read back per step by Trial::ClosureSteps.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/index_fast_parser.h"
#include "store/index_file.h"
#include "trainscope/trial.h"
#include "trainscope/writer.h"
#include "trial_test_util.h"

namespace trainscope {
namespace {

using testing::CollectionsJson;
using testing::FastOptions;
using testing::FloatView;
using testing::TempDir;

std::vector<ClosureStep> Lbfgs(int evaluations, int first = 0) {
  ClosureStep s{"LBFGS", {}};
  for (int e = 0; e < evaluations; ++e) {
    s.evaluations.push_back({"MSELoss_output_" + std::to_string(first + e)});
  }
  return {s};
}

TEST(ClosureRecordTest, EncodedAfterSmdebugsMetaKeysAndParsedBack) {
  IndexFile f;
  f.mode = Mode::kTrain;
  f.mode_step = 3;
  f.event_file_name = "events/000000000003/000000000003_worker_0.tfevents";
  f.tensors.push_back({"MSELoss_output_0", 0, 40, 1});
  f.closures = Lbfgs(2);
  f.closures[0].evaluations[1].push_back("BCELoss_output_0");
  const std::string json = EncodeIndexFile(f);
  EXPECT_EQ(json,
            "{\"meta\": {\"mode\": \"TRAIN\", \"mode_step\": 3, \"event_file_name\": "
            "\"events/000000000003/000000000003_worker_0.tfevents\", \"closure_evaluations\": "
            "[{\"optimizer\": \"LBFGS\", \"evaluations\": [[\"MSELoss_output_0\"], "
            "[\"MSELoss_output_1\", \"BCELoss_output_0\"]]}]}, \"tensor_payload\": "
            "[{\"tensorname\": \"MSELoss_output_0\", \"start_idx\": 0, \"length\": 40, "
            "\"crc32c\": 1}], \"shape_payload\": []}");
  auto r = ParseIndexFile(json, "idx.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->closures, f.closures);
  // Without a record the file is byte for byte what it was (smdebug's keys only).
  f.closures.clear();
  EXPECT_EQ(EncodeIndexFile(f).find("closure"), std::string::npos);
}

TEST(ClosureRecordTest, MalformedRecordIsCorruptionNamingThePath) {
  const std::string head = R"({"meta": {"mode": "TRAIN", "mode_step": 1, "closure_evaluations": )";
  const std::string tail = R"(}, "shape_payload": []})";
  const char* bad[] = {
      R"({})",
      R"(["LBFGS"])",
      R"([{"evaluations": [["a"]]}])",
      R"([{"optimizer": 1, "evaluations": [["a"]]}])",
      R"([{"optimizer": "LBFGS"}])",
      R"([{"optimizer": "LBFGS", "evaluations": ["a"]}])",
      R"([{"optimizer": "LBFGS", "evaluations": [[1]]}])",
  };
  for (const char* v : bad) {
    auto r = ParseIndexFile(head + v + tail, "index/000000000/bad.json");
    ASSERT_EQ(r.status().code(), StatusCode::kCorruption) << v;
    EXPECT_NE(r.status().message().find("closure_evaluations"), std::string::npos)
        << r.status().ToString();
  }
  auto empty = ParseIndexFile(head + "[]" + tail, "ok.json");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->closures.empty());
}

TEST(ClosureRecordTest, FastParserLeavesTheRecordToTheFullParser) {
  IndexFile f;
  f.event_file_name = "events/e.tfevents";
  f.tensors.push_back({"MSELoss_output_0", 0, 40, 1});
  f.closures = Lbfgs(3);
  const std::string json = EncodeIndexFile(f);
  IndexFileView view;
  EXPECT_FALSE(FastParseIndexFile(json, &view));
  auto full = ParseIndexFile(json, "idx.json");
  ASSERT_TRUE(full.ok());
  ViewOf(*full, &view);
  ASSERT_NE(view.closures, nullptr);
  EXPECT_EQ(*view.closures, f.closures);
  f.closures.clear();
  EXPECT_TRUE(FastParseIndexFile(EncodeIndexFile(f), &view));
  EXPECT_EQ(view.closures, nullptr);
}

void WriteAndRead(bool journal) {
  TempDir dir;
  WriterOptions o;
  o.quiet = true;
  o.journal = journal;
  auto w = TrialWriter::Open(dir.path(), o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  TrialWriter& writer = **w;
  ASSERT_TRUE(writer.WriteCollections(CollectionsJson(1)).ok());
  EXPECT_EQ(writer.SetClosureSteps(Lbfgs(2)).code(), StatusCode::kInvalidArgument);  // no step
  const std::vector<float> v = {0.5f};
  for (int64_t step = 0; step < 3; ++step) {
    ASSERT_TRUE(writer.BeginStep(step, Mode::kTrain, step).ok());
    for (int e = 0; e < 3; ++e) {
      ASSERT_TRUE(writer.AddTensor("MSELoss_output_" + std::to_string(e), FloatView(v)).ok());
    }
    if (step != 1) {  // step 1: none
      ASSERT_TRUE(writer.SetClosureSteps(Lbfgs(3)).ok());
    }
    ASSERT_TRUE(writer.EndStep().ok());
  }
  ASSERT_TRUE(writer.Close().ok());
  auto t = Trial::Open(dir.path(), FastOptions(Env::Default()));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->ClosureSteps(0), Lbfgs(3));
  EXPECT_TRUE((*t)->ClosureSteps(1).empty());
  EXPECT_EQ((*t)->ClosureSteps(2, "worker_0"), Lbfgs(3));
  EXPECT_TRUE((*t)->ClosureSteps(2, "worker_9").empty());
  EXPECT_TRUE((*t)->ClosureSteps(7).empty());
  // The values are there as ever.
  auto names = (*t)->TensorNames(Mode::kGlobal, 2);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 3u);
}

TEST(ClosureRecordTest, WrittenAndReadBackPerStep) { WriteAndRead(/*journal=*/false); }

TEST(ClosureRecordTest, WrittenThroughTheJournal) { WriteAndRead(/*journal=*/true); }

}  // namespace
}  // namespace trainscope
