// Following a trial that another process is writing: every new step becomes visible (inotify
// and polling), and a writer killed with SIGKILL leaves a trial whose listed steps all read.
// No timing is asserted: visibility is awaited with WaitForChange up to a generous deadline.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "store/trial_impl.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"
#include "trial_test_util.h"

namespace trainscope {
namespace {

using namespace std::chrono_literals;
using testing::Pattern;
using testing::TempDir;

constexpr auto kDeadline = 60s;  // generous: a loaded CI machine may be slow
constexpr int64_t kElems = 64;

// Runs in the forked child: writes `steps` steps (forever if steps < 0) of tensors "a" and "b",
// `delay` apart, then closes (end marker) and exits. Never returns.
[[noreturn]] void WriterProcess(const std::string& dir, int64_t steps,
                                std::chrono::milliseconds delay) {
  WriterOptions o;
  o.quiet = true;
  auto w = TrialWriter::Open(dir, o);
  if (!w.ok()) _exit(2);
  for (int64_t s = 0; steps < 0 || s < steps; ++s) {
    auto a = Pattern(s, kElems, 0);
    auto b = Pattern(s, kElems, 0.5f);
    if (!(*w)->BeginStep(s, Mode::kTrain, s).ok()) _exit(3);
    if (!(*w)->AddTensor("a", testing::FloatView(a)).ok()) _exit(3);
    if (!(*w)->AddTensor("b", testing::FloatView(b)).ok()) _exit(3);
    if (!(*w)->EndStep().ok()) _exit(3);
    if (!(*w)->Flush().ok()) _exit(4);
    if (s == 0 && !(*w)->WriteCollections(testing::CollectionsJson(1)).ok()) _exit(5);
    std::this_thread::sleep_for(delay);
  }
  _exit((*w)->Close().ok() ? 0 : 6);
}

pid_t StartWriter(const std::string& dir, int64_t steps, std::chrono::milliseconds delay) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) WriterProcess(dir, steps, delay);
  return pid;
}

void CheckStep(Trial& t, int64_t s) {
  auto a = t.Value("a", s);
  ASSERT_TRUE(a.ok()) << "step " << s << ": " << a.status().ToString();
  EXPECT_EQ(testing::Floats(*a), Pattern(s, kElems, 0));
  auto b = t.Value("b", s, Mode::kTrain);
  ASSERT_TRUE(b.ok()) << "step " << s << ": " << b.status().ToString();
  EXPECT_EQ(testing::Floats(*b), Pattern(s, kElems, 0.5f));
}

class FollowTest : public ::testing::TestWithParam<bool> {};

TEST_P(FollowTest, ReaderSeesEachStepOfAWriterInAnotherProcess) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/trial";
  constexpr int64_t kSteps = 12;
  const pid_t pid = StartWriter(dir, kSteps, 15ms);
  ASSERT_GT(pid, 0);
  TrialOptions o;
  o.use_inotify = GetParam();
  o.end_delay = 10ms;
  auto opened = Trial::OpenWhenReady(dir, o, kDeadline, 5ms);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Trial& t = **opened;
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  int64_t checked = 0;  // steps [0, checked) were seen and read
  while (checked < kSteps && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(t.WaitForChange(1000ms).ok());
    const auto steps = t.Steps();
    // Steps appear in order and none disappears.
    ASSERT_GE(static_cast<int64_t>(steps.size()), checked);
    for (int64_t i = 0; i < static_cast<int64_t>(steps.size()); ++i) ASSERT_EQ(steps[i], i);
    for (; checked < static_cast<int64_t>(steps.size()); ++checked) CheckStep(t, checked);
  }
  EXPECT_EQ(checked, kSteps);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // After the writer closed: the end marker ends the trial.
  while (!t.loaded_all_steps() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(t.WaitForChange(1000ms).ok());
  }
  EXPECT_TRUE(t.loaded_all_steps());
  EXPECT_EQ(t.HasPassedStep(kSteps), StepState::kUnavailable);
}

// Open inotify instances of this process (each is an fd linked to "anon_inode:inotify").
int InotifyInstances() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(e.path(), ec).string() == "anon_inode:inotify") ++n;
  }
  return n;
}

// A user has 128 inotify instances by default, shared by all their programs: a trial keeps one
// only while steps may still come.
TEST(FollowInotifyTest, ACompleteTrialGivesItsInotifyInstanceBack) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/trial";
  const int before = InotifyInstances();
  const pid_t pid = StartWriter(dir, /*steps=*/3, 50ms);
  ASSERT_GT(pid, 0);
  TrialOptions o;
  o.end_delay = 10ms;
  auto live = Trial::OpenWhenReady(dir, o, kDeadline, 5ms);
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  if (InotifyInstances() == before) GTEST_SKIP() << "no inotify here: the trial polls";
  EXPECT_EQ(InotifyInstances(), before + 1);  // following a trial being written
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (!(*live)->loaded_all_steps() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE((*live)->WaitForChange(1000ms).ok());
  }
  ASSERT_TRUE((*live)->loaded_all_steps());
  EXPECT_EQ(InotifyInstances(), before);  // complete: given back
  EXPECT_EQ((*live)->Steps(), (std::vector<int64_t>{0, 1, 2}));
  CheckStep(**live, 2);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  // Complete trials opened later hold none once they have read the trial (their first query).
  std::vector<std::unique_ptr<Trial>> finished;
  for (int i = 0; i < 3; ++i) {
    auto t = Trial::Open(dir, o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ((*t)->Steps(), (std::vector<int64_t>{0, 1, 2}));
    finished.push_back(std::move(*t));
  }
  EXPECT_EQ(InotifyInstances(), before);
}

INSTANTIATE_TEST_SUITE_P(Discovery, FollowTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Inotify" : "Polling"; });

TEST(KilledWriterTest, CompletedStepsOfAKilledWriterAllRead) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/trial";
  const pid_t pid = StartWriter(dir, /*steps=*/-1, 1ms);
  ASSERT_GT(pid, 0);
  TrialOptions o;
  o.end_delay = 0ms;
  auto opened = Trial::OpenWhenReady(dir, o, kDeadline, 5ms);
  if (!opened.ok()) kill(pid, SIGKILL);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while ((*opened)->Steps().size() < 30 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE((*opened)->WaitForChange(1000ms).ok());
  }
  // Kill it mid-flight: the writer is in the middle of some step's files.
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE((*opened)->training_ended());  // no end marker from a killed writer
  // Both the follower and a fresh reader read every listed step.
  ASSERT_TRUE((*opened)->Refresh().ok());
  auto fresh = Trial::Open(dir, o);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  for (Trial* t : {opened->get(), fresh->get()}) {
    const auto steps = t->Steps();
    ASSERT_GE(steps.size(), 30u);
    for (size_t i = 0; i < steps.size(); ++i) {
      ASSERT_EQ(steps[i], static_cast<int64_t>(i));
      CheckStep(*t, steps[i]);
    }
    auto names = t->TensorNames();
    ASSERT_TRUE(names.ok());
    EXPECT_EQ(*names, (std::vector<std::string>{"a", "b"}));
  }
}

// The final refresh waits until end_delay has passed since the end marker was written (files of
// another worker may land just after it); a trial that ended earlier than that waits nothing.
class EndDelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const pid_t pid = StartWriter(dir_, /*steps=*/2, 0ms);
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  // Dates the end marker `offset` from now.
  void DateMarker(std::chrono::seconds offset) {
    struct timespec now;
    ASSERT_EQ(clock_gettime(CLOCK_REALTIME, &now), 0);
    now.tv_sec += offset.count();
    const struct timespec times[2] = {now, now};
    ASSERT_EQ(utimensat(AT_FDCWD, marker_.c_str(), times, 0), 0) << marker_;
  }
  // Opens the trial and reads it to its end.
  std::unique_ptr<Trial> ReadToEnd(std::chrono::milliseconds end_delay) {
    TrialOptions o;
    o.end_delay = end_delay;
    auto t = Trial::Open(dir_, o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (!t.ok()) return nullptr;
    EXPECT_TRUE((*t)->Refresh().ok());
    EXPECT_TRUE((*t)->loaded_all_steps());
    return std::move(*t);
  }

  TempDir tmp_;
  const std::string dir_ = tmp_.path() + "/trial";
  const std::string marker_ = dir_ + "/" + std::string(trial_format::kEndOfJobFile);
};

TEST_F(EndDelayTest, AnOldEndMarkerIsReadAtOnce) {
  DateMarker(-7200s);
  // Five minutes from the marker's writing ran out long ago (waiting them times the test out).
  auto t = ReadToEnd(std::chrono::minutes(5));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Steps(), (std::vector<int64_t>{0, 1}));
}

// What is left to wait, by the marker's time (microseconds since the epoch).
TEST(EndDelayLeftTest, TheMarkersAgeIsDeducted) {
  using Us = std::chrono::microseconds;
  constexpr uint64_t kWritten = 1'700'000'000'123'456;  // not in whole seconds
  const Us delay(100'000);
  EXPECT_EQ(EndDelayLeft(delay, kWritten, kWritten), delay);                // just written
  EXPECT_EQ(EndDelayLeft(delay, kWritten, kWritten + 30'000), Us(70'000));  // 30 ms ago
  EXPECT_EQ(EndDelayLeft(delay, kWritten, kWritten + 100'000), Us(0));      // delay ago
  EXPECT_EQ(EndDelayLeft(delay, kWritten, kWritten + 7'200'000'000), Us(0));
  EXPECT_EQ(EndDelayLeft(Us(0), kWritten, kWritten), Us(0));  // no delay asked
}

TEST(EndDelayLeftTest, AnUndatableMarkerGetsTheWholeDelay) {
  using Us = std::chrono::microseconds;
  constexpr uint64_t kWritten = 1'700'000'000'123'456;
  const Us delay(100'000);
  // From the reader's future (two machines' clocks).
  EXPECT_EQ(EndDelayLeft(delay, kWritten + 3'600'000'000, kWritten), delay);
  // In whole seconds: a file system without fractions may date it seconds early.
  EXPECT_EQ(EndDelayLeft(delay, uint64_t{1'700'000'000'000'000}, uint64_t{1'700'000'030'000'000}),
            delay);
  // No time from the storage.
  EXPECT_EQ(EndDelayLeft(delay, Status::NotSupported("no times"), kWritten), delay);
}

TEST_F(EndDelayTest, PosixDatesTheMarkerToTheMicrosecond) {
  // The time the reader judges is the one written on the file (utimensat here).
  DateMarker(-7200s);
  auto written = Env::Default()->GetModificationMicros(marker_);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  const uint64_t now = Env::Default()->NowMicros();
  EXPECT_GE(now - *written, uint64_t{7'199'000'000});
  EXPECT_LE(now - *written, uint64_t{7'260'000'000});
  EXPECT_EQ(Env::Default()->GetModificationMicros(dir_ + "/nothing").status().code(),
            StatusCode::kNotFound);
}

TEST_F(EndDelayTest, AStepLandingDuringTheDelayIsRead) {
  DateMarker(0s);
  // Another worker publishes step 2 just after the first one's end marker.
  std::thread other([this] {
    std::this_thread::sleep_for(50ms);
    WriterOptions o;
    o.quiet = true;
    o.worker = "worker_1";
    o.write_end_marker = false;
    auto w = TrialWriter::Open(dir_, o);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    auto a = Pattern(2, kElems, 0);
    auto b = Pattern(2, kElems, 0.5f);
    ASSERT_TRUE((*w)->BeginStep(2, Mode::kTrain, 2).ok());
    ASSERT_TRUE((*w)->AddTensor("a", testing::FloatView(a)).ok());
    ASSERT_TRUE((*w)->AddTensor("b", testing::FloatView(b)).ok());
    ASSERT_TRUE((*w)->EndStep().ok());
    ASSERT_TRUE((*w)->Close().ok());
  });
  auto t = ReadToEnd(3000ms);
  other.join();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Steps(), (std::vector<int64_t>{0, 1, 2}));
  CheckStep(*t, 2);
}

}  // namespace
}  // namespace trainscope
