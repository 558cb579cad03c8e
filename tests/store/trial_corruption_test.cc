// Damaged trials: corrupt or truncated event files and index files give Corruption (naming the
// file and the byte offset) or NotFound, never a crash; undamaged steps still read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "trainscope/trial.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"
#include "trial_test_util.h"

namespace trainscope {
namespace {

using testing::FastOptions;
using testing::FloatView;
using testing::Pattern;
using testing::TempDir;

class TrialCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() + "/trial";
    auto w = testing::OpenWriter(Env::Default(), dir_);
    ASSERT_NE(w, nullptr);
    for (int64_t s = 0; s < 4; ++s) {
      ASSERT_TRUE(w->BeginStep(s, Mode::kTrain, s).ok());
      auto v = Pattern(s, 1000, 0);
      ASSERT_TRUE(w->AddTensor("x", FloatView(v)).ok());
      ASSERT_TRUE(w->AddTensor("y", FloatView(v)).ok());
      ASSERT_TRUE(w->EndStep().ok());
    }
    ASSERT_TRUE(w->WriteCollections(testing::CollectionsJson(1)).ok());
    ASSERT_TRUE(w->Close().ok());
  }

  std::string Path(const std::string& rel) const { return dir_ + "/" + rel; }
  std::string EventFile(int64_t step) const {
    return Path(trial_format::EventFilePath(step, "worker_0"));
  }
  std::string Read(const std::string& path) const {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  void Write(const std::string& path, const std::string& data) const {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << data;
  }
  std::unique_ptr<Trial> Open(bool verify = true) {
    TrialOptions o = FastOptions(Env::Default());
    o.verify_checksums = verify;
    auto t = Trial::Open(dir_, o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return std::move(t).value();
  }

  TempDir tmp_;
  std::string dir_;
};

bool Mentions(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

TEST_F(TrialCorruptionTest, FlippedTensorByteFailsThePayloadChecksum) {
  std::string bytes = Read(EventFile(1));
  bytes[bytes.size() - 100] ^= 0x40;  // inside the last tensor's content
  Write(EventFile(1), bytes);
  auto t = Open();
  int corrupt = 0;
  for (const char* name : {"x", "y"}) {
    auto v = t->Value(name, 1);
    if (v.ok()) continue;
    ++corrupt;
    EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
    EXPECT_TRUE(Mentions(v.status(), "events/000000000001/000000000001_worker_0.tfevents"))
        << v.status().ToString();
    EXPECT_TRUE(Mentions(v.status(), "byte ")) << v.status().ToString();
    EXPECT_TRUE(Mentions(v.status(), "CRC32C")) << v.status().ToString();
  }
  EXPECT_EQ(corrupt, 1);
  EXPECT_TRUE(t->Value("x", 0).ok());  // other steps are intact
  // Without verification the damaged value reads (the framing itself is intact).
  auto unchecked = Open(/*verify=*/false);
  EXPECT_TRUE(unchecked->Value("x", 1).ok());
  EXPECT_TRUE(unchecked->Value("y", 1).ok());
}

TEST_F(TrialCorruptionTest, TruncatedEventFile) {
  std::string bytes = Read(EventFile(2));
  Write(EventFile(2), bytes.substr(0, bytes.size() / 2));
  auto t = Open();
  auto y = t->Value("y", 2);
  EXPECT_EQ(y.status().code(), StatusCode::kCorruption) << y.status().ToString();
  EXPECT_TRUE(Mentions(y.status(), "000000000002_worker_0.tfevents")) << y.status().ToString();
  EXPECT_TRUE(Mentions(y.status(), "byte ")) << y.status().ToString();
  EXPECT_EQ(t->Shape("y", 2).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(t->ReductionValue("y", 2, {ReductionOp::kMax, false}).status().code(),
            StatusCode::kCorruption);
  // Truncated to nothing at all.
  Write(EventFile(3), "");
  auto empty = Open()->Value("x", 3);
  EXPECT_EQ(empty.status().code(), StatusCode::kCorruption) << empty.status().ToString();
}

TEST_F(TrialCorruptionTest, DamagedRecordHeader) {
  std::string bytes = Read(EventFile(0));
  bytes[3] ^= 0x01;  // the first record's length: its masked CRC no longer matches
  Write(EventFile(0), bytes);
  auto t = Open(/*verify=*/false);
  auto v = t->Value("x", 0).ok() ? t->Value("y", 0) : t->Value("x", 0);
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption) << v.status().ToString();
  EXPECT_TRUE(Mentions(v.status(), "byte offset 0 ")) << v.status().ToString();
}

TEST_F(TrialCorruptionTest, MissingEventFile) {
  ASSERT_EQ(std::remove(EventFile(1).c_str()), 0);
  auto v = Open()->Value("x", 1);
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Mentions(v.status(), "000000000001_worker_0.tfevents")) << v.status().ToString();
}

TEST_F(TrialCorruptionTest, GarbageIndexFileIsReportedOnceAndSkipped) {
  Write(Path("index/000000000/000000000007_worker_0.json"), "{\"meta\": {\"mode\": ");
  Write(Path("index/000000000/000000000008_worker_0.json"), "");
  Write(Path("index/000000000/000000000009_worker_0.json"), "[1, 2, 3]");
  auto t = Open();
  Status s = t->Refresh();
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_TRUE(Mentions(s, "00000000000")) << s.ToString();
  EXPECT_TRUE(Mentions(s, "2 more failed")) << s.ToString();
  EXPECT_TRUE(t->Refresh().ok());  // not read again
  EXPECT_EQ(t->Steps(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(t->Value("x", 3).ok());
}

// DamagedIndexFiles lists each damaged file once, and a sparse index file past
// kMaxIndexFileBytes is refused by its size, never read into memory.
TEST_F(TrialCorruptionTest, DamagedAndOversizedIndexFilesAreListedOnce) {
  Write(Path("index/000000000/000000000007_worker_0.json"), "{\"meta\": {\"mode\": ");
  const std::string huge = Path("index/000000000/000000000008_worker_0.json");
  Write(huge, "{");
  ASSERT_EQ(::truncate(huge.c_str(), static_cast<off_t>(trial_format::kMaxIndexFileBytes * 64)),
            0);  // 4 GiB, sparse: no disk used
  auto t = Open();
  Status s = t->Refresh();
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  const std::vector<std::string> damaged = t->DamagedIndexFiles();
  ASSERT_EQ(damaged.size(), 2u);
  const std::string& big =
      damaged[0].find("000000000008") != std::string::npos ? damaged[0] : damaged[1];
  EXPECT_NE(big.find("4294967296 bytes"), std::string::npos) << big;
  EXPECT_NE(big.find("not read"), std::string::npos) << big;
  EXPECT_TRUE(t->Refresh().ok());  // not read again
  EXPECT_EQ(t->DamagedIndexFiles().size(), 2u);
  EXPECT_EQ(t->Steps(), (std::vector<int64_t>{0, 1, 2, 3}));
}

// Issue 17: a collections file past kMaxCollectionsFileBytes (here 4 GiB, sparse, as a damaged
// or hostile trial can hold) is refused by its size, naming the file, never read into memory.
TEST_F(TrialCorruptionTest, OversizedCollectionsFileIsRefusedNotRead) {
  const std::string path = Path(trial_format::CollectionsFilePath("worker_0"));
  ASSERT_EQ(
      ::truncate(path.c_str(), static_cast<off_t>(trial_format::kMaxCollectionsFileBytes * 64)), 0);
  auto t = Trial::Open(dir_, FastOptions(Env::Default()));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kOutOfRange) << t.status().ToString();
  EXPECT_TRUE(Mentions(t.status(), "worker_0_collections.json")) << t.status().ToString();
  EXPECT_TRUE(Mentions(t.status(), "4294967296 bytes")) << t.status().ToString();
}

TEST_F(TrialCorruptionTest, IndexEntryPointingOutsideItsEventFile) {
  const std::string ev = trial_format::EventFilePath(0, "worker_0");
  Write(Path("index/000000000/000000000005_worker_0.json"),
        R"({"meta": {"mode": "TRAIN", "mode_step": 5, "event_file_name": ")" + ev +
            R"("}, "tensor_payload": [{"tensorname": "x", "start_idx": 123456789, "length": 64},
            {"tensorname": "y", "start_idx": 0, "length": 16}]})");
  Write(Path("index/000000000/000000000006_worker_0.json"),
        R"({"meta": {"mode": "TRAIN", "mode_step": 6, "event_file_name": "events/nope.tfevents"},
            "tensor_payload": [{"tensorname": "x", "start_idx": 0, "length": 64}]})");
  auto t = Open();
  auto far = t->Value("x", 5);
  EXPECT_EQ(far.status().code(), StatusCode::kCorruption) << far.status().ToString();
  EXPECT_TRUE(Mentions(far.status(), "123456789")) << far.status().ToString();
  // The right offset with the wrong length, or another tensor's record.
  auto wrong = t->Value("y", 5);
  EXPECT_EQ(wrong.status().code(), StatusCode::kCorruption) << wrong.status().ToString();
  auto missing = t->Value("x", 6);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
}

}  // namespace
}  // namespace trainscope
