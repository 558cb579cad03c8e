// The model calls of a step (index meta.model_calls, docs/formats/index.md): encoded after
// smdebug's keys when 2 or more, parsed strictly by both parsers, written by TrialWriter (with
// and without the journal) and read back per step and worker by Trial::ModelCalls.
#include <gtest/gtest.h>

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

IndexFile StepIndex(int64_t calls) {
  IndexFile f;
  f.mode = Mode::kTrain;
  f.mode_step = 41;
  f.event_file_name = "events/000000000041/000000000041_worker_0.tfevents";
  f.tensors.push_back({"loss_output_0", 0, 24, 7});
  f.model_calls = calls;
  return f;
}

TEST(ModelCallsTest, EncodedAfterSmdebugsMetaKeysAndParsedBackByBothParsers) {
  const std::string json = EncodeIndexFile(StepIndex(187));
  EXPECT_EQ(json,
            "{\"meta\": {\"mode\": \"TRAIN\", \"mode_step\": 41, \"event_file_name\": "
            "\"events/000000000041/000000000041_worker_0.tfevents\", \"model_calls\": 187}, "
            "\"tensor_payload\": [{\"tensorname\": \"loss_output_0\", \"start_idx\": 0, "
            "\"length\": 24, \"crc32c\": 7}], \"shape_payload\": []}");
  auto full = ParseIndexFile(json, "idx.json");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->model_calls, 187);
  IndexFileView view;
  ASSERT_TRUE(FastParseIndexFile(json, &view));  // a rollout's every step: the fast path
  EXPECT_EQ(view.model_calls, 187);
  ASSERT_EQ(view.tensors.size(), 1u);
  // One call (or none counted): the key is absent, the file smdebug's byte for byte.
  for (int64_t calls : {0, 1}) {
    const std::string plain = EncodeIndexFile(StepIndex(calls));
    EXPECT_EQ(plain.find("model_calls"), std::string::npos) << calls;
    ASSERT_TRUE(FastParseIndexFile(plain, &view));
    EXPECT_EQ(view.model_calls, 0);
  }
}

TEST(ModelCallsTest, MalformedValueIsCorruptionNamingThePath) {
  const std::string head = R"({"meta": {"mode": "TRAIN", "mode_step": 1, "model_calls": )";
  const std::string tail = R"(}, "shape_payload": []})";
  for (const char* v : {"-3", "\"12\"", "1.5", "[2]", "null", "true", "9223372036854775807"}) {
    const std::string json = head + v + tail;
    IndexFileView view;
    EXPECT_FALSE(FastParseIndexFile(json, &view)) << v;  // left to the full parser, which says
    auto r = ParseIndexFile(json, "index/000000000/bad.json");
    ASSERT_EQ(r.status().code(), StatusCode::kCorruption) << v;
    EXPECT_NE(r.status().message().find("model_calls"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("index/000000000/bad.json"), std::string::npos);
  }
}

void WriteAndRead(bool journal) {
  TempDir dir;
  const std::vector<float> v = {0.5f};
  // Two workers; worker_1 records calls at steps 0 and 2, worker_0 at step 2 only.
  for (const char* worker : {"worker_1", "worker_0"}) {
    WriterOptions o;
    o.quiet = true;
    o.journal = journal;
    o.worker = worker;
    auto w = TrialWriter::Open(dir.path(), o);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    TrialWriter& writer = **w;
    ASSERT_TRUE(writer.WriteCollections(CollectionsJson(1)).ok());
    EXPECT_EQ(writer.SetModelCalls(5).code(), StatusCode::kInvalidArgument);  // no step open
    const bool first = std::string(worker) == "worker_1";
    for (int64_t step = 0; step < 3; ++step) {
      ASSERT_TRUE(writer.BeginStep(step, Mode::kTrain, step).ok());
      ASSERT_TRUE(writer.AddTensor("loss_output_0", FloatView(v)).ok());
      if (step == 2) {
        ASSERT_TRUE(writer.SetModelCalls(first ? 40 : 30).ok());
      } else if (step == 0 && first) {
        ASSERT_TRUE(writer.SetModelCalls(9).ok());
      } else if (step == 1) {
        ASSERT_TRUE(writer.SetModelCalls(1).ok());  // one call: not written
      }
      ASSERT_TRUE(writer.EndStep().ok());
    }
    ASSERT_TRUE(writer.Close().ok());
  }
  auto t = Trial::Open(dir.path(), FastOptions(Env::Default()));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Trial& trial = **t;
  EXPECT_EQ(trial.ModelCalls(0), 9);   // only worker_1 has it there
  EXPECT_EQ(trial.ModelCalls(1), 0);   // one call
  EXPECT_EQ(trial.ModelCalls(2), 30);  // the first worker by name
  EXPECT_EQ(trial.ModelCalls(2, "worker_1"), 40);
  EXPECT_EQ(trial.ModelCalls(0, "worker_0"), 0);
  EXPECT_EQ(trial.ModelCalls(2, "worker_9"), 0);
  EXPECT_EQ(trial.ModelCalls(7), 0);
  auto names = trial.TensorNames(Mode::kGlobal, 2);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 1u);
}

TEST(ModelCallsTest, WrittenAndReadBackPerStepAndWorker) { WriteAndRead(/*journal=*/false); }

TEST(ModelCallsTest, WrittenThroughTheJournal) { WriteAndRead(/*journal=*/true); }

}  // namespace
}  // namespace trainscope
