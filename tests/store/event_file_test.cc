#include "trainscope/event_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "store/trial_test_util.h"
#include "trainscope/tensorboard.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope {
namespace {

using testing::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

// One step of two tensors, the second with a wall time of its own.
std::string WriteStep(const std::string& dir) {
  WriterOptions opts;
  opts.write_end_marker = false;
  auto w = TrialWriter::Open(dir, opts);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE((*w)->BeginStep(7, Mode::kEval, 2).ok());
  const float a[2][3] = {{1, 2, 3}, {4, 5, 6}};
  const double b = 0.5;
  EXPECT_TRUE((*w)->AddTensor("Net_fc1.weight", {DType::kF32, a, {2, 3}, {}, {}}).ok());
  EXPECT_TRUE((*w)->AddTensor("scalar/lr", {DType::kF64, &b, {1}, {}, {}}, 1.6e9 + 0.25).ok());
  EXPECT_TRUE((*w)->EndStep().ok());
  EXPECT_TRUE((*w)->Close().ok());
  return dir + "/" + trial_format::EventFilePath(7, trial_format::kDefaultWorker);
}

TEST(ReadEventFile, EveryTensorInFileOrderWithStepModeAndWallTime) {
  TempDir tmp;
  const double before = static_cast<double>(::time(nullptr)) - 1;
  const std::string path = WriteStep(tmp.path());
  auto r = ReadEventFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  const EventFileTensor& w = (*r)[0];
  EXPECT_EQ(w.name, "Net_fc1.weight");
  EXPECT_EQ(w.step, 7);
  EXPECT_EQ(w.mode, Mode::kEval);
  EXPECT_EQ(w.mode_step, 2);
  EXPECT_GE(w.wall_time, before);  // now, when no wall time was given
  ASSERT_EQ(w.value.dtype, DType::kF32);
  EXPECT_EQ(w.value.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(static_cast<const float*>(w.value.data)[5], 6.0f);
  const EventFileTensor& s = (*r)[1];
  EXPECT_EQ(s.name, "scalar/lr");
  EXPECT_DOUBLE_EQ(s.wall_time, 1.6e9 + 0.25);
  ASSERT_EQ(s.value.dtype, DType::kF64);
  EXPECT_EQ(*static_cast<const double*>(s.value.data), 0.5);
}

TEST(ReadEventFile, TensorBoardScalarsAreFloatScalars) {
  TempDir tmp;
  auto tb = TensorBoardWriter::Open(tmp.path() + "/tb");
  ASSERT_TRUE(tb.ok());
  ASSERT_TRUE((*tb)->AddScalar(Mode::kTrain, "loss", 3, 1.5, 1.7e9).ok());
  ASSERT_TRUE((*tb)->Close().ok());
  auto r = ReadEventFile((*tb)->FilePath(Mode::kTrain));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);  // the file_version record holds no value
  EXPECT_EQ((*r)[0].name, "loss");
  EXPECT_EQ((*r)[0].step, 3);
  EXPECT_DOUBLE_EQ((*r)[0].wall_time, 1.7e9);
  ASSERT_EQ((*r)[0].value.dtype, DType::kF32);
  EXPECT_TRUE((*r)[0].value.shape.empty());
  EXPECT_EQ(*static_cast<const float*>((*r)[0].value.data), 1.5f);
}

TEST(ReadEventFile, DamageIsCorruptionNamingFileAndOffsetMissingIsNotFound) {
  TempDir tmp;
  const std::string path = WriteStep(tmp.path());
  std::string bytes = ReadAll(path);
  ASSERT_GT(bytes.size(), 40u);
  WriteAll(path, bytes.substr(0, bytes.size() - 3));  // the last record cut short
  auto cut = ReadEventFile(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kCorruption);
  EXPECT_NE(cut.status().message().find(path), std::string::npos) << cut.status().ToString();
  bytes[20] = static_cast<char>(bytes[20] ^ 0x40);  // inside the first record's payload
  bytes[0] = static_cast<char>(bytes[0] ^ 0x01);    // and its length
  WriteAll(path, bytes);
  auto bad = ReadEventFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("byte offset 0"), std::string::npos)
      << bad.status().ToString();
  auto missing = ReadEventFile(tmp.path() + "/none.tfevents");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace trainscope
