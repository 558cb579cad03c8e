#include "trainscope/writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "store/trial_check.h"

namespace trainscope {
namespace {

using testing::ListFiles;
using testing::ReadTrialChecked;

// A real temporary folder, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "ts_writer_XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

std::string BoolPattern(size_t n, uint32_t seed) {
  std::string s = Pattern(n, seed);
  for (char& c : s) c = static_cast<char>(c & 1);
  return s;
}

const DType kAllNumeric[] = {DType::kF16,  DType::kBF16,      DType::kF32,       DType::kF64,
                             DType::kI8,   DType::kI16,       DType::kI32,       DType::kI64,
                             DType::kU8,   DType::kU16,       DType::kU32,       DType::kU64,
                             DType::kBool, DType::kComplex64, DType::kComplex128};

// Writes steps 0, 2, 4 with every dtype and checks everything read back.
void RoundTrip(Env* env, const std::string& dir) {
  WriterOptions opts;
  opts.env = env;
  opts.quiet = true;
  auto w = TrialWriter::Open(dir, opts);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::map<std::pair<int64_t, std::string>, std::string> expected;
  std::vector<std::shared_ptr<std::string>> borrowed;
  for (int64_t step : {0, 2, 4}) {
    const Mode mode = step == 4 ? Mode::kEval : Mode::kTrain;
    ASSERT_TRUE((*w)->BeginStep(step, mode, step / 2).ok());
    EXPECT_TRUE((*w)->step_open());
    for (DType t : kAllNumeric) {
      const std::vector<int64_t> shape{3, 5};
      const std::string bytes =
          t == DType::kBool ? BoolPattern(15, step) : Pattern(15 * DTypeSize(t), step);
      const std::string name = "t_" + std::string(DTypeName(t));
      ASSERT_TRUE((*w)->AddTensor(name, {t, bytes.data(), shape, {}, {}}).ok());
      expected[{step, name}] = bytes;
    }
    // 0-d, empty and a large tensor (content aligned to 64 bytes in the file).
    const float scalar = 0.5f * static_cast<float>(step);
    ASSERT_TRUE((*w)->AddTensor("loss", TensorView::Scalar(DType::kF32, &scalar)).ok());
    expected[{step, "loss"}] = std::string(reinterpret_cast<const char*>(&scalar), 4);
    ASSERT_TRUE((*w)->AddTensor("empty", {DType::kF32, nullptr, {0, 4}, {}, {}}).ok());
    expected[{step, "empty"}] = "";
    const std::string big = Pattern(3 << 20, step + 100);
    ASSERT_TRUE((*w)->AddTensor("big", {DType::kF32, big.data(), {3 << 18}, {}, {}}).ok());
    expected[{step, "big"}] = big;
    // A strided view (the transpose of a 2x3 int32 matrix) is copied contiguously.
    const int32_t m[6] = {1, 2, 3, 4, 5, 6};
    ASSERT_TRUE((*w)->AddTensor("transposed", {DType::kI32, m, {3, 2}, {1, 3}, {}}).ok());
    const int32_t mt[6] = {1, 4, 2, 5, 3, 6};
    expected[{step, "transposed"}] = std::string(reinterpret_cast<const char*>(mt), 24);
    // Borrowed bytes.
    auto keep = std::make_shared<std::string>(Pattern(200000, step + 7));
    ASSERT_TRUE((*w)->AddTensorNoCopy(
                        "borrowed",
                        {DType::kU8, keep->data(), {static_cast<int64_t>(keep->size())}, {}, {}},
                        keep)
                    .ok());
    expected[{step, "borrowed"}] = *keep;
    // Strings.
    TensorView sv{DType::kString, nullptr, {3}, {}, {"alpha", "", "\xc3\xa9t\xc3\xa9"}};
    ASSERT_TRUE((*w)->AddTensor("names", sv).ok());
    ASSERT_TRUE((*w)->AddShape("shape_only", {7, 9}).ok());
    ASSERT_TRUE((*w)->EndStep().ok());
  }
  ASSERT_TRUE((*w)->Close().ok()) << (*w)->first_error().ToString();
  const WriterStats st = (*w)->stats();
  EXPECT_EQ(st.steps_written, 3);
  EXPECT_EQ(st.tensors_written, 3 * (15 + 6));
  EXPECT_EQ(st.steps_failed, 0);
  EXPECT_EQ(st.queue_bytes, 0u);

  auto steps = ReadTrialChecked(env, dir);
  ASSERT_EQ(steps.size(), 3u);
  for (auto& [step, rs] : steps) {
    EXPECT_EQ(rs.mode, step == 4 ? Mode::kEval : Mode::kTrain);
    EXPECT_EQ(rs.mode_step, step / 2);
    EXPECT_EQ(rs.tensors.size(), 15u + 6u);
    for (auto& [name, t] : rs.tensors) {
      if (name == "names") {
        EXPECT_EQ(t.strings, (std::vector<std::string>{"alpha", "", "\xc3\xa9t\xc3\xa9"}));
        continue;
      }
      EXPECT_EQ(t.bytes, (expected[{step, name}])) << step << " " << name;
    }
    EXPECT_EQ(rs.tensors["t_bfloat16"].dtype, DType::kBF16);
    EXPECT_EQ(rs.tensors["t_bfloat16"].shape, (std::vector<int64_t>{3, 5}));
    EXPECT_TRUE(rs.tensors["loss"].shape.empty());
    EXPECT_EQ(rs.tensors["empty"].shape, (std::vector<int64_t>{0, 4}));
    EXPECT_EQ(rs.tensors["big"].content_offset % 64, 0u);
    EXPECT_EQ(rs.tensors["borrowed"].content_offset % 64, 0u);
    EXPECT_EQ(rs.tensors["t_float64"].content_offset % 8, 0u);
    EXPECT_EQ(rs.shapes["shape_only"], (std::vector<int64_t>{7, 9}));
  }
  EXPECT_TRUE(env->FileExists(JoinPath(dir, "training_job_end.ts")));
  for (const std::string& f : ListFiles(env, dir)) {
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  }
}

TEST(TrialWriterTest, RoundTripInMemory) {
  auto env = NewMemEnv();
  RoundTrip(env.get(), "/trial");
}

TEST(TrialWriterTest, RoundTripOnDisk) {
  TempDir dir;
  RoundTrip(Env::Default(), dir.path() + "/trial");
}

TEST(TrialWriterTest, ReplacedNameLeavesOnlyTheLastRecord) {
  auto env = NewMemEnv();
  WriterOptions opts;
  opts.env = env.get();
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->BeginStep(1, Mode::kTrain, 1).ok());
  const std::string a = Pattern(40, 1), b = Pattern(40, 2), c = Pattern(8, 3);
  ASSERT_TRUE((*w)->AddTensor("x", {DType::kF32, a.data(), {10}, {}, {}}).ok());
  ASSERT_TRUE((*w)->AddTensor("y", {DType::kF64, c.data(), {1}, {}, {}}).ok());
  TensorView s{DType::kString, nullptr, {1}, {}, {"s1"}};
  ASSERT_TRUE((*w)->AddTensor("s", s).ok());
  ASSERT_TRUE((*w)->AddTensor("x", {DType::kF32, b.data(), {10}, {}, {}}).ok());
  ASSERT_TRUE((*w)->EndStep().ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto steps = ReadTrialChecked(env.get(), "/t");  // also checks no stray bytes in the file
  ASSERT_EQ(steps[1].tensors.size(), 3u);
  EXPECT_EQ(steps[1].tensors["x"].bytes, b);
  EXPECT_EQ(steps[1].tensors["y"].bytes, c);
  EXPECT_EQ(steps[1].tensors["s"].strings, std::vector<std::string>{"s1"});
}

TEST(TrialWriterTest, EmptyAndShapeOnlySteps) {
  auto env = NewMemEnv();
  WriterOptions opts;
  opts.env = env.get();
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->BeginStep(0, Mode::kTrain, 0).ok());
  ASSERT_TRUE((*w)->EndStep().ok());
  ASSERT_TRUE((*w)->BeginStep(1, Mode::kTrain, 1).ok());
  ASSERT_TRUE((*w)->AddShape("w", {2, 2}).ok());
  ASSERT_TRUE((*w)->EndStep().ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_FALSE(env->FileExists("/t/" + trial_format::IndexFilePath(0, "worker_0")));
  EXPECT_FALSE(env->FileExists("/t/events"));
  auto steps = ReadTrialChecked(env.get(), "/t");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[1].shapes["w"], (std::vector<int64_t>{2, 2}));
}

TEST(TrialWriterTest, MisuseIsInvalidArgument) {
  auto env = NewMemEnv();
  WriterOptions opts;
  opts.env = env.get();
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  const float f = 1;
  EXPECT_EQ((*w)->AddTensor("x", TensorView::Scalar(DType::kF32, &f)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->EndStep().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*w)->BeginStep(5, Mode::kTrain, 0).ok());
  EXPECT_EQ((*w)->BeginStep(6, Mode::kTrain, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->AddTensor("", TensorView::Scalar(DType::kF32, &f)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->AddTensor("bad\xff", TensorView::Scalar(DType::kF32, &f)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->AddTensor("x", {DType::kF32, nullptr, {2}, {}, {}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->AddTensor("x", {DType::kF32, &f, {-1}, {}, {}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->AddTensor("s", {DType::kString, nullptr, {2}, {}, {"one"}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->AddTensor("s", {DType::kString, nullptr, {1, 1}, {}, {"one"}}).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE((*w)->EndStep().ok());
  EXPECT_EQ((*w)->BeginStep(5, Mode::kTrain, 0).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ((*w)->BeginStep(9, Mode::kTrain, 0).code(), StatusCode::kAborted);
  EXPECT_TRUE((*w)->Close().ok());  // idempotent
}

TEST(TrialWriterTest, WriteCollectionsAndEndOfJob) {
  auto env = NewMemEnv();
  WriterOptions opts;
  opts.env = env.get();
  opts.worker = "worker_3";
  opts.write_end_marker = false;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(
      (*w)->WriteCollections("{\"collections\": {}, \"_meta\": {\"num_workers\": 1}}").ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto text = env->ReadFile("/t/collections/000000000/worker_3_collections.json");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{\"collections\": {}, \"_meta\": {\"num_workers\": 1}}");
  EXPECT_FALSE(env->FileExists("/t/training_job_end.ts"));
  ASSERT_TRUE(WriteEndOfJob(env.get(), "/t").ok());
  EXPECT_TRUE(env->FileExists("/t/training_job_end.ts"));
}

void WriteStep(TrialWriter* w, int64_t step, size_t bytes) {
  ASSERT_TRUE(w->BeginStep(step, Mode::kTrain, step).ok());
  const std::string data = Pattern(bytes, static_cast<uint32_t>(step));
  ASSERT_TRUE(
      w->AddTensor("x", {DType::kU8, data.data(), {static_cast<int64_t>(bytes)}, {}, {}}).ok());
  ASSERT_TRUE(w->EndStep().ok());
}

TEST(TrialWriterTest, FullDiskLosesOnlyTheFailedStep) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  WriterOptions opts;
  opts.env = &env;
  opts.quiet = true;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  for (int64_t s = 0; s < 3; ++s) WriteStep(w->get(), s, 1000);
  ASSERT_TRUE((*w)->Flush().ok());
  env.SetDiskSpaceLeft(500);
  WriteStep(w->get(), 3, 100000);
  const Status err = (*w)->Flush();
  ASSERT_EQ(err.code(), StatusCode::kIOError);
  EXPECT_EQ(err.os_errno(), ENOSPC);
  EXPECT_NE(err.message().find("/t/events/000000000003/000000000003_worker_0.tfevents.tmp"),
            std::string::npos)
      << err.message();
  EXPECT_NE(err.message().find(std::strerror(ENOSPC)), std::string::npos) << err.message();
  // The disk has room again: later steps are written.
  env.SetDiskSpaceLeft(-1);
  WriteStep(w->get(), 4, 1000);
  EXPECT_EQ((*w)->Close().code(), StatusCode::kIOError);  // first error stays
  EXPECT_EQ((*w)->first_error(), err);
  const WriterStats st = (*w)->stats();
  EXPECT_EQ(st.steps_written, 4);
  EXPECT_EQ(st.steps_failed, 1);
  auto steps = ReadTrialChecked(mem.get(), "/t");
  EXPECT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps.count(3), 0u);
  EXPECT_EQ(steps[4].tensors["x"].bytes, Pattern(1000, 4));
  for (const std::string& f : ListFiles(mem.get(), "/t")) {
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
    EXPECT_EQ(f.find("000000000003"), std::string::npos) << f;
  }
  // The job ended (readers must not wait for ever), and the trial says what it lost.
  EXPECT_TRUE(mem->FileExists("/t/training_job_end.ts"));
  auto marker = nlohmann::json::parse(*mem->ReadFile("/t/incomplete_worker_0.json"));
  EXPECT_EQ(marker["worker"], "worker_0");
  EXPECT_EQ(marker["final"], true);
  EXPECT_EQ(marker["steps_written"], 4);
  EXPECT_EQ(marker["steps_failed"], 1);
  EXPECT_EQ(marker["steps_dropped"], 0);
  EXPECT_EQ(marker["first_lost_step"], 3);
  EXPECT_NE(marker["first_error"].get<std::string>().find(std::strerror(ENOSPC)),
            std::string::npos);
}

TEST(TrialWriterTest, TheFirstLossIsMarkedInTheTrialAtOnce) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  WriterOptions opts;
  opts.env = &env;
  opts.quiet = true;
  opts.io_threads = 1;  // step 1 is on disk before step 2 fails
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  WriteStep(w->get(), 0, 1000);
  ASSERT_TRUE((*w)->Flush().ok());
  EXPECT_FALSE(mem->FileExists("/t/incomplete_worker_0.json"));  // nothing lost yet
  env.SetDiskSpaceLeft(3000);                                    // step 1 fits, step 2 does not
  WriteStep(w->get(), 1, 1000);
  WriteStep(w->get(), 2, 100000);
  EXPECT_EQ((*w)->Flush().os_errno(), ENOSPC);
  // Before Close (a SIGKILL now would leave it): the marker of the loss so far. The disk is
  // full, so its content may not fit: then it is an empty file.
  ASSERT_TRUE(mem->FileExists("/t/incomplete_worker_0.json"));
  EXPECT_EQ(*mem->ReadFile("/t/incomplete_worker_0.json"), "");
  env.SetDiskSpaceLeft(-1);
  WriteStep(w->get(), 3, 1000);
  (void)(*w)->Close();
  auto marker = nlohmann::json::parse(*mem->ReadFile("/t/incomplete_worker_0.json"));
  EXPECT_EQ(marker["final"], true);
  EXPECT_EQ(marker["steps_written"], 3);
  EXPECT_EQ(marker["steps_failed"], 1);
  EXPECT_EQ(marker["first_lost_step"], 2);
  EXPECT_TRUE(mem->FileExists("/t/training_job_end.ts"));
}

TEST(TrialWriterTest, ACompleteTrialHasNoIncompleteMarker) {
  auto mem = NewMemEnv();
  WriterOptions opts;
  opts.env = mem.get();
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  for (int64_t s = 0; s < 3; ++s) WriteStep(w->get(), s, 100);
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_FALSE(mem->FileExists("/t/incomplete_worker_0.json"));
  EXPECT_TRUE(mem->FileExists("/t/training_job_end.ts"));
}

TEST(TrialWriterTest, FailingSyncIsReported) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  WriterOptions opts;
  opts.env = &env;
  opts.sync = true;
  opts.quiet = true;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  WriteStep(w->get(), 0, 100);
  ASSERT_TRUE((*w)->Flush().ok());
  env.SetSyncFails(true);
  WriteStep(w->get(), 1, 100);
  const Status err = (*w)->Flush();
  EXPECT_EQ(err.os_errno(), EIO) << err.ToString();
  EXPECT_NE(err.message().find("000000000001_worker_0.tfevents"), std::string::npos);
  env.SetSyncFails(false);
  (void)(*w)->Close();
  auto steps = ReadTrialChecked(mem.get(), "/t");
  EXPECT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps.count(0), 1u);
  EXPECT_GE(env.failures(), 1);
}

TEST(TrialWriterTest, FailingRenameAndCreateAreReported) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  WriterOptions opts;
  opts.env = &env;
  opts.quiet = true;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  env.SetRenameFails(true);
  WriteStep(w->get(), 0, 100);
  EXPECT_EQ((*w)->Flush().os_errno(), EIO);
  env.SetRenameFails(false);
  env.SetCreateFails(true);
  WriteStep(w->get(), 1, 100);
  ASSERT_TRUE(!(*w)->Flush().ok());
  env.SetCreateFails(false);
  WriteStep(w->get(), 2, 100);
  (void)(*w)->Close();
  EXPECT_EQ((*w)->stats().steps_failed, 2);
  auto steps = ReadTrialChecked(mem.get(), "/t");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps.count(2), 1u);
  for (const std::string& f : ListFiles(mem.get(), "/t")) {
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  }
}

// An Env whose NewWritableFile blocks until opened, so tests can hold the writer thread.
class GateEnv : public FaultInjectionEnv {
 public:
  explicit GateEnv(Env* base) : FaultInjectionEnv(base) {}
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    std::unique_lock<std::mutex> l(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(l, [&] { return open_; });
    l.unlock();
    return FaultInjectionEnv::NewWritableFile(path);
  }
  // True once n calls have entered (false after 30 s, so a broken writer fails, not hangs).
  bool WaitEntered(int n) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(30), [&] { return entered_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool open_ = false;
};

class DropStepPolicyTest : public ::testing::TestWithParam<int> {};

TEST_P(DropStepPolicyTest, CountsDrops) {
  const int threads = GetParam();
  auto mem = NewMemEnv();
  GateEnv env(mem.get());
  WriterOptions opts;
  opts.env = &env;
  opts.quiet = true;
  opts.max_queue_bytes = 1;
  opts.when_full = WriterOptions::WhenFull::kDropStep;
  opts.io_threads = threads;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  // Every I/O thread takes a step and is held at the gate.
  for (int s = 0; s < threads; ++s) {
    WriteStep(w->get(), s, 100);
    if (!env.WaitEntered(s + 1)) {
      env.Open();  // let the writer close
      FAIL() << "I/O thread " << s + 1 << " never took a step";
    }
  }
  const int64_t n = threads;
  WriteStep(w->get(), n, 100);      // nothing waits: accepted whatever its size
  WriteStep(w->get(), n + 1, 100);  // queue full: dropped at EndStep
  WriteStep(w->get(), n + 2, 100);  // still full at BeginStep: dropped without copying
  EXPECT_EQ((*w)->stats().steps_dropped, 2);
  env.Open();
  ASSERT_TRUE((*w)->Close().ok());
  const WriterStats st = (*w)->stats();
  EXPECT_EQ(st.steps_written, n + 1);
  EXPECT_EQ(st.steps_dropped, 2);
  auto steps = ReadTrialChecked(mem.get(), "/t");
  EXPECT_EQ(steps.size(), static_cast<size_t>(n + 1));
  for (int64_t s = 0; s <= n; ++s) EXPECT_EQ(steps.count(s), 1u) << s;
  EXPECT_TRUE(mem->FileExists("/t/training_job_end.ts"));
  // The trial says what it lacks.
  auto marker = nlohmann::json::parse(*mem->ReadFile("/t/incomplete_worker_0.json"));
  EXPECT_EQ(marker["steps_dropped"], 2);
  EXPECT_EQ(marker["steps_failed"], 0);
  EXPECT_EQ(marker["steps_written"], n + 1);
}

INSTANTIATE_TEST_SUITE_P(TrialWriterIoThreads, DropStepPolicyTest, ::testing::Values(1, 2, 3));

// The queue is bounded in steps too (max_queue_steps, counting the steps being written): that is
// what a killed process can lose. Here with the drop policy, so that the test needs no clock.
TEST_P(DropStepPolicyTest, StepBoundCountsStepsBeingWritten) {
  const int threads = GetParam();
  auto mem = NewMemEnv();
  GateEnv env(mem.get());
  WriterOptions opts;
  opts.env = &env;
  opts.quiet = true;
  opts.max_queue_steps = 4;  // bytes are no limit here (1 GiB)
  opts.when_full = WriterOptions::WhenFull::kDropStep;
  opts.io_threads = threads;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  for (int s = 0; s < threads; ++s) {
    WriteStep(w->get(), s, 100);
    if (!env.WaitEntered(s + 1)) {
      env.Open();
      FAIL() << "I/O thread " << s + 1 << " never took a step";
    }
  }
  // `threads` steps are being written; the queue takes steps until 4 are handed over (and
  // always one, when nothing waits).
  const int64_t accepted = std::max(4, threads + 1);
  for (int64_t s = threads; s < accepted + 3; ++s) WriteStep(w->get(), s, 100);
  EXPECT_EQ((*w)->stats().steps_dropped, 3);
  env.Open();
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ((*w)->stats().steps_written, accepted);
  auto steps = ReadTrialChecked(mem.get(), "/t");
  EXPECT_EQ(steps.size(), static_cast<size_t>(accepted));
  EXPECT_EQ(WriterOptions().max_queue_steps, 8);  // the default bound (trial.md, Durability)
}

// Records the order in which files are renamed into place. With `hold_step0`, step 0's event
// file is not created until step 1's event file is in place (or 10 s have passed): with two I/O
// threads, step 1's event file is then finished first, while step 0's is still being written.
class OrderEnv : public FaultInjectionEnv {
 public:
  OrderEnv(Env* base, bool hold_step0) : FaultInjectionEnv(base), hold_(hold_step0) {}
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    if (hold_ && path.find("/000000000000_worker_0.tfevents") != std::string::npos) {
      std::unique_lock<std::mutex> l(mu_);
      overlapped_ = cv_.wait_for(l, std::chrono::seconds(10), [&] { return step1_done_; });
    }
    return FaultInjectionEnv::NewWritableFile(path);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    Status s = FaultInjectionEnv::RenameFile(from, to);
    std::lock_guard<std::mutex> l(mu_);
    if (s.ok()) renames_.push_back(to);
    if (to.find("/000000000001_worker_0.tfevents") != std::string::npos) {
      step1_done_ = true;
      cv_.notify_all();
    }
    return s;
  }
  bool overlapped() {
    std::lock_guard<std::mutex> l(mu_);
    return overlapped_;
  }
  // Steps of the files renamed into `folder` ("index/" or "events/"), in the order renamed.
  std::vector<int64_t> Renamed(const std::string& folder) {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<int64_t> out;
    for (const std::string& to : renames_) {
      if (to.find("/" + folder) == std::string::npos) continue;
      auto name = trial_format::ParseStepFileName(to.substr(to.rfind('/') + 1));
      EXPECT_TRUE(name.has_value()) << to;
      if (name) out.push_back(name->step);
    }
    return out;
  }

 private:
  const bool hold_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool step1_done_ = false;
  bool overlapped_ = false;
  std::vector<std::string> renames_;
};

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

TEST(TrialWriterTest, IoThreadsWriteEventFilesAtOnceAndPublishIndexesInOrder) {
  auto mem = NewMemEnv();
  OrderEnv env(mem.get(), /*hold_step0=*/true);
  WriterOptions opts;
  opts.env = &env;
  opts.io_threads = 2;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  for (int64_t s = 0; s < 6; ++s) WriteStep(w->get(), s, 1000 + 100 * s);
  ASSERT_TRUE((*w)->Close().ok()) << (*w)->first_error().ToString();
  // Step 1's event file was written while step 0's was still to come...
  EXPECT_TRUE(env.overlapped());
  const std::vector<int64_t> events = env.Renamed("events/");
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0], 1);
  // ... yet the indexes went out in step order.
  EXPECT_EQ(env.Renamed("index/"), Iota(6));
  auto steps = ReadTrialChecked(mem.get(), "/t");
  ASSERT_EQ(steps.size(), 6u);
  for (int64_t s = 0; s < 6; ++s) {
    EXPECT_EQ(steps[s].tensors["x"].bytes, Pattern(1000 + 100 * s, static_cast<uint32_t>(s)));
  }
  EXPECT_EQ((*w)->stats().steps_written, 6);
}

TEST(TrialWriterTest, ManyIoThreadsOnDiskLoseNothing) {
  TempDir tmp;
  OrderEnv env(Env::Default(), /*hold_step0=*/false);
  WriterOptions opts;
  opts.env = &env;
  opts.io_threads = 4;
  opts.max_queue_bytes = 4 << 20;  // the training thread waits now and then
  const std::string dir = tmp.path() + "/trial";
  auto w = TrialWriter::Open(dir, opts);
  ASSERT_TRUE(w.ok());
  constexpr int64_t kSteps = 120;
  auto size_of = [](int64_t s, int k) {
    return static_cast<size_t>((s * 7919 + k * 104729) % 600000 + 1);
  };
  for (int64_t s = 0; s < kSteps; ++s) {
    ASSERT_TRUE((*w)->BeginStep(s, s % 10 == 9 ? Mode::kEval : Mode::kTrain, s).ok());
    for (int k = 0; k < 3; ++k) {
      const std::string data = Pattern(size_of(s, k), static_cast<uint32_t>(s * 3 + k));
      const TensorView v{DType::kU8, data.data(), {static_cast<int64_t>(data.size())}, {}, {}};
      ASSERT_TRUE((*w)->AddTensor("t" + std::to_string(k), v).ok());
    }
    ASSERT_TRUE((*w)->EndStep().ok());
  }
  ASSERT_TRUE((*w)->Close().ok()) << (*w)->first_error().ToString();
  EXPECT_EQ(env.Renamed("index/"), Iota(kSteps));
  const WriterStats st = (*w)->stats();
  EXPECT_EQ(st.steps_written, kSteps);
  EXPECT_EQ(st.tensors_written, 3 * kSteps);
  EXPECT_EQ(st.queue_bytes, 0u);
  auto steps = ReadTrialChecked(Env::Default(), dir);
  ASSERT_EQ(steps.size(), static_cast<size_t>(kSteps));
  for (int64_t s = 0; s < kSteps; ++s) {
    EXPECT_EQ(steps[s].mode, s % 10 == 9 ? Mode::kEval : Mode::kTrain);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(steps[s].tensors["t" + std::to_string(k)].bytes,
                Pattern(size_of(s, k), static_cast<uint32_t>(s * 3 + k)))
          << "step " << s << " tensor " << k;
    }
  }
}

TEST(TrialWriterTest, FullDiskWithIoThreadsKeepsTheTrialConsistent) {
  auto mem = NewMemEnv();
  FaultInjectionEnv fault(mem.get());
  OrderEnv env(&fault, /*hold_step0=*/false);
  WriterOptions opts;
  opts.env = &env;
  opts.quiet = true;
  opts.io_threads = 3;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  fault.SetDiskSpaceLeft(20 * 5000);  // room for about 20 of the 40 steps
  constexpr int64_t kSteps = 40;
  for (int64_t s = 0; s < kSteps; ++s) WriteStep(w->get(), s, 5000);
  const Status err = (*w)->Close();
  EXPECT_EQ(err.os_errno(), ENOSPC) << err.ToString();
  const WriterStats st = (*w)->stats();
  EXPECT_EQ(st.steps_written + st.steps_failed, kSteps);
  EXPECT_GE(st.steps_failed, 1);
  EXPECT_GE(st.steps_written, 1);
  // Every indexed step is whole, and indexes went out in step order.
  auto steps = ReadTrialChecked(mem.get(), "/t");
  EXPECT_EQ(steps.size(), static_cast<size_t>(st.steps_written));
  for (auto& [s, rs] : steps) {
    EXPECT_EQ(rs.tensors["x"].bytes, Pattern(5000, static_cast<uint32_t>(s))) << s;
  }
  const std::vector<int64_t> indexed = env.Renamed("index/");
  EXPECT_TRUE(std::is_sorted(indexed.begin(), indexed.end()));
  for (const std::string& f : ListFiles(mem.get(), "/t")) {
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  }
  EXPECT_TRUE(mem->FileExists("/t/training_job_end.ts"));
  EXPECT_TRUE(mem->FileExists("/t/incomplete_worker_0.json"));
}

TEST(TrialWriterTest, BlockPolicyWaitsAndLosesNothing) {
  auto mem = NewMemEnv();
  GateEnv env(mem.get());
  WriterOptions opts;
  opts.env = &env;
  opts.max_queue_bytes = 1;
  auto w = TrialWriter::Open("/t", opts);
  ASSERT_TRUE(w.ok());
  std::thread opener([&] {
    EXPECT_TRUE(env.WaitEntered(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    env.Open();
  });
  for (int64_t s = 0; s < 5; ++s) WriteStep(w->get(), s, 100);
  ASSERT_TRUE((*w)->Close().ok());
  opener.join();
  const WriterStats st = (*w)->stats();
  EXPECT_EQ(st.steps_written, 5);
  EXPECT_EQ(st.steps_dropped, 0);
  EXPECT_EQ(ReadTrialChecked(mem.get(), "/t").size(), 5u);
}

TEST(TrialWriterTest, KilledWriterLeavesOnlyCompleteSteps) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/killed";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: write steps of a few tensors forever.
    WriterOptions opts;
    opts.quiet = true;
    auto w = TrialWriter::Open(dir, opts);
    if (!w.ok()) ::_exit(2);
    const std::string data = Pattern(300000, 5);
    for (int64_t s = 0;; ++s) {
      if (!(*w)->BeginStep(s, Mode::kTrain, s).ok()) ::_exit(3);
      for (int k = 0; k < 4; ++k) {
        (void)(*w)->AddTensor("t" + std::to_string(k), {DType::kF32, data.data(), {75000}, {}, {}});
      }
      (void)(*w)->EndStep();
    }
  }
  // Parent: wait until some steps are on disk, then kill the child mid-write.
  int index_files = 0;
  for (int i = 0; i < 6000 && index_files < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    index_files = 0;
    for (const std::string& f : ListFiles(Env::Default(), dir)) {
      if (f.rfind("index/", 0) == 0 && f.size() > 5 && f.substr(f.size() - 5) == ".json") {
        ++index_files;
      }
    }
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_GE(index_files, 8);
  auto steps = ReadTrialChecked(Env::Default(), dir);
  ASSERT_GE(steps.size(), 8u);
  const std::string data = Pattern(300000, 5);
  for (auto& [s, rs] : steps) {
    ASSERT_EQ(rs.tensors.size(), 4u) << "step " << s;
    EXPECT_EQ(rs.tensors["t3"].bytes, data);
  }
  EXPECT_FALSE(Env::Default()->FileExists(dir + "/training_job_end.ts"));
}

}  // namespace
}  // namespace trainscope
