// The step journal (docs/formats/journal.md): steps handed over survive SIGKILL, and recovery
// publishes them whole, in step order, up to the first damaged one.
#include "store/journal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "store/index_file.h"
#include "store/step_buffer.h"
#include "store/trial_check.h"
#include "store/trial_test_util.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope {
namespace {

using testing::ListFiles;
using testing::Pattern;
using testing::ReadTrialChecked;
using testing::TempDir;

// The journal is off by default (WriterOptions::journal): these tests ask for it.
WriterOptions Journaled(WriterOptions o = {}) {
  o.journal = true;
  return o;
}

TensorView U8(const std::string& data) {
  return TensorView{DType::kU8, data.data(), {static_cast<int64_t>(data.size())}, {}, {}};
}

bool JournalFilesLeft(const std::string& dir) {
  for (const std::string& f : ListFiles(Env::Default(), dir)) {
    if (f.rfind(".trainscope/journal", 0) == 0) return true;
  }
  return false;
}

// Leaves `n` sealed, unpublished steps in dir's journal for worker_0, as a writer killed right
// after handing them over would (the Journal's destruction releases the lock, like a death).
void LeaveJournal(const std::string& dir, int n, size_t bytes) {
  auto j = Journal::Open(dir, "worker_0", nullptr);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  for (int s = 0; s < n; ++s) {
    StepBuffer b(s, Mode::kTrain, s, j->get(), 4096);
    const std::string data = Pattern(bytes, static_cast<uint32_t>(s));
    b.AddTensor("x", U8(data), 1.0, false, nullptr);
    b.AddTensor("y", U8(data.substr(0, 10)), 1.0, false, nullptr);
    b.AddShape("x", {static_cast<int64_t>(bytes)});
    b.Finish();
    ASSERT_TRUE(b.status().ok());
    IndexFile index;
    index.mode = Mode::kTrain;
    index.mode_step = s;
    index.shapes = b.shapes();
    index.event_file_name = trial_format::EventFilePath(s, "worker_0");
    index.tensors = b.TensorEntries();
    auto seq = (*j)->Seal(b.EnsureSlot(), s, b.file_size(), EncodeIndexFile(index));
    ASSERT_TRUE(seq.ok()) << seq.status().ToString();
    EXPECT_EQ(*seq, static_cast<uint64_t>(s));
  }
}

std::string SlotOf(const std::string& dir, int64_t step) {
  // LeaveJournal's slots: id 0 was prepared by Open and serves step 0, then one per step.
  return journal_format::SlotPath(dir, "worker_0", static_cast<uint64_t>(step));
}

void CheckSteps(const std::string& dir, int n, size_t bytes) {
  auto steps = ReadTrialChecked(Env::Default(), dir);
  ASSERT_EQ(steps.size(), static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) {
    EXPECT_EQ(steps[s].tensors["x"].bytes, Pattern(bytes, static_cast<uint32_t>(s))) << s;
    EXPECT_EQ(steps[s].shapes["x"], std::vector<int64_t>{static_cast<int64_t>(bytes)}) << s;
  }
}

TEST(JournalTest, OffByDefault) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t";
  ::unsetenv("TRAINSCOPE_JOURNAL");
  auto w = TrialWriter::Open(dir, {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_FALSE(Env::Default()->FileExists(journal_format::LogPath(dir, "worker_0")));
  ASSERT_TRUE((*w)->BeginStep(0, Mode::kTrain, 0).ok());
  ASSERT_TRUE((*w)->AddTensor("x", U8(Pattern(1000, 0))).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto steps = ReadTrialChecked(Env::Default(), dir);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].tensors["x"].bytes, Pattern(1000, 0));
  // TRAINSCOPE_JOURNAL=1 turns it on for a writer whose options leave it off.
  ::setenv("TRAINSCOPE_JOURNAL", "1", 1);
  auto on = TrialWriter::Open(tmp.path() + "/u", {});
  ::unsetenv("TRAINSCOPE_JOURNAL");
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(Env::Default()->FileExists(journal_format::LogPath(tmp.path() + "/u", "worker_0")));
}

TEST(JournalTest, WriterPublishesEveryStepAndLeavesNoJournal) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t";
  WriterOptions opts;
  opts.io_threads = 2;
  auto w = TrialWriter::Open(dir, Journaled(opts));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(Env::Default()->FileExists(journal_format::LogPath(dir, "worker_0")));
  constexpr int kSteps = 40;
  for (int s = 0; s < kSteps; ++s) {
    ASSERT_TRUE((*w)->BeginStep(s, Mode::kTrain, s).ok());
    const size_t bytes = (s % 7 == 0) ? (3u << 20) : 1000u + 997u * s;  // crosses the growth
    const std::string data = Pattern(bytes, static_cast<uint32_t>(s));
    if (s % 5 == 1) {
      ASSERT_TRUE((*w)->AddTensor("x", U8("replaced")).ok());  // re-laid out at EndStep
    }
    if (s % 3 == 0) {
      auto keep = std::make_shared<std::string>(data);
      ASSERT_TRUE((*w)->AddTensorNoCopy("x", U8(*keep), keep).ok());
    } else {
      ASSERT_TRUE((*w)->AddTensor("x", U8(data)).ok());
    }
    ASSERT_TRUE((*w)->AddShape("x", {static_cast<int64_t>(bytes)}).ok());
    ASSERT_TRUE((*w)->EndStep().ok());
  }
  ASSERT_TRUE((*w)->BeginStep(kSteps, Mode::kEval, 0).ok());  // shapes only: no event file
  ASSERT_TRUE((*w)->AddShape("z", {2, 3}).ok());
  ASSERT_TRUE((*w)->EndStep().ok());
  ASSERT_TRUE((*w)->Close().ok()) << (*w)->first_error().ToString();
  EXPECT_EQ((*w)->stats().steps_written, kSteps + 1);
  auto steps = ReadTrialChecked(Env::Default(), dir);
  ASSERT_EQ(steps.size(), static_cast<size_t>(kSteps + 1));
  for (int s = 0; s < kSteps; ++s) {
    const size_t bytes = (s % 7 == 0) ? (3u << 20) : 1000u + 997u * s;
    EXPECT_EQ(steps[s].tensors.size(), 1u) << s;
    EXPECT_EQ(steps[s].tensors["x"].bytes, Pattern(bytes, static_cast<uint32_t>(s))) << s;
  }
  EXPECT_EQ(steps[kSteps].shapes["z"], (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(JournalFilesLeft(dir));
  for (const std::string& f : ListFiles(Env::Default(), dir)) {
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  }
}

TEST(JournalTest, SecondLiveWriterOfTheWorkerIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t";
  auto a = TrialWriter::Open(dir, Journaled());
  ASSERT_TRUE(a.ok());
  auto b = TrialWriter::Open(dir, Journaled());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kAborted);
  EXPECT_NE(b.status().message().find("another live process"), std::string::npos)
      << b.status().ToString();
  WriterOptions other;
  other.worker = "worker_1";
  // another worker has its own journal
  EXPECT_TRUE(TrialWriter::Open(dir, Journaled(other)).ok());
  // While the writer lives, recovery leaves its worker alone.
  auto rec = RecoverTrial(dir);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->workers_in_use, std::vector<std::string>{"worker_0"});
}

TEST(JournalTest, RecoveryPublishesAllSealedStepsInOrder) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t";
  LeaveJournal(dir, 6, 50000);
  EXPECT_TRUE(ReadTrialChecked(Env::Default(), dir).empty());  // nothing published yet
  auto rec = RecoverTrial(dir);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->steps_recovered, 6);
  EXPECT_EQ(rec->steps_lost, 0);
  EXPECT_TRUE(rec->problems.empty()) << rec->problems[0];
  CheckSteps(dir, 6, 50000);
  EXPECT_FALSE(JournalFilesLeft(dir));
  EXPECT_FALSE(Env::Default()->FileExists(dir + "/incomplete_worker_0.json"));
  // Nothing left to do the second time.
  auto again = RecoverTrial(dir);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->steps_recovered, 0);
}

TEST(JournalTest, NextWriterOnTheFolderRecoversFirst) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t";
  LeaveJournal(dir, 3, 1000);
  auto w = TrialWriter::Open(dir, Journaled());
  ASSERT_TRUE(w.ok());
  CheckSteps(dir, 3, 1000);  // published before the writer wrote anything
  ASSERT_TRUE((*w)->BeginStep(3, Mode::kTrain, 3).ok());
  const std::string data = Pattern(1000, 3);
  ASSERT_TRUE((*w)->AddTensor("x", U8(data)).ok());
  ASSERT_TRUE((*w)->AddShape("x", {1000}).ok());
  ASSERT_TRUE((*w)->Close().ok());
  CheckSteps(dir, 4, 1000);
}

TEST(JournalTest, KilledBetweenPublicationStepsIsFinished) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t";
  LeaveJournal(dir, 3, 20000);
  // Step 0 as if killed after its slot was truncated (index .tmp written, slot not renamed);
  // step 1 as if killed after the slot's rename, before the index's.
  auto step_files = [&](int64_t s) {
    const std::string slot = SlotOf(dir, s);
    std::ifstream in(slot, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return all;
  };
  auto event_size = [&](int64_t s) {
    StepBuffer b(s, Mode::kTrain, s);
    const std::string data = Pattern(20000, static_cast<uint32_t>(s));
    b.AddTensor("x", U8(data), 1.0, false, nullptr);
    b.AddTensor("y", U8(data.substr(0, 10)), 1.0, false, nullptr);
    return b.file_size();
  };
  for (int64_t s : {0, 1}) {
    const std::string all = step_files(s);
    const uint64_t e = event_size(s);
    ASSERT_GT(all.size(), e);
    const std::string index = dir + "/" + trial_format::IndexFilePath(s, "worker_0");
    ASSERT_TRUE(Env::Default()->CreateDirs(std::string(Dirname(index))).ok());
    std::string json = all.substr(e);
    json = json.substr(0, json.find('\0'));
    ASSERT_TRUE(Env::Default()->WriteFileAtomic(index + ".tmp", json, false).ok());
    ASSERT_EQ(::truncate(SlotOf(dir, s).c_str(), static_cast<off_t>(e)), 0);
    if (s == 1) {
      const std::string event = dir + "/" + trial_format::EventFilePath(s, "worker_0");
      ASSERT_TRUE(Env::Default()->CreateDirs(std::string(Dirname(event))).ok());
      ASSERT_EQ(::rename(SlotOf(dir, s).c_str(), event.c_str()), 0);
    }
  }
  auto rec = RecoverTrial(dir);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->steps_recovered, 3) << (rec->problems.empty() ? "" : rec->problems[0]);
  CheckSteps(dir, 3, 20000);
}

// Damage, and what recovery must make of it: the steps before the damaged one, nothing after.
struct Damage {
  const char* what;
  int recovered;   // steps published (0 .. recovered-1)
  int lost;        // steps reported lost
  int first_lost;  // the first of them
};

void Corrupt(const std::string& dir, const std::string& what) {
  if (what == "truncated slot") {
    ASSERT_EQ(::truncate(SlotOf(dir, 3).c_str(), 5000), 0);
  } else if (what == "flipped tensor byte") {
    int fd = ::open(SlotOf(dir, 2).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c = 0;
    ASSERT_EQ(::pread(fd, &c, 1, 20000), 1);
    c = static_cast<char>(c ^ 0x40);
    ASSERT_EQ(::pwrite(fd, &c, 1, 20000), 1);
    ::close(fd);
  } else if (what == "missing slot") {
    ASSERT_EQ(::unlink(SlotOf(dir, 4).c_str()), 0);
  } else if (what == "torn log entry") {
    int fd = ::open(journal_format::LogPath(dir, "worker_0").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    const char junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_EQ(::pwrite(fd, junk, 8, 1 * journal_format::kEntrySize + 20), 8);
    ::close(fd);
  } else if (what == "slot is a directory") {
    ASSERT_EQ(::unlink(SlotOf(dir, 0).c_str()), 0);
    ASSERT_EQ(::mkdir(SlotOf(dir, 0).c_str(), 0755), 0);
  } else if (what == "slot is a symlink") {
    ASSERT_EQ(::unlink(SlotOf(dir, 3).c_str()), 0);
    ASSERT_EQ(::symlink("/dev/zero", SlotOf(dir, 3).c_str()), 0);
  }
}

TEST(JournalTest, DamagedJournalIsRecoveredUpToTheLastIntactStep) {
  // A torn entry hides its own step (its slot reads as a step in progress); the steps after it
  // are reported.
  const Damage cases[] = {{"truncated slot", 3, 3, 3},      {"flipped tensor byte", 2, 4, 2},
                          {"missing slot", 4, 2, 4},        {"torn log entry", 1, 4, 2},
                          {"slot is a directory", 0, 6, 0}, {"slot is a symlink", 3, 3, 3}};
  for (const Damage& d : cases) {
    SCOPED_TRACE(d.what);
    TempDir tmp;
    const std::string dir = tmp.path() + "/t";
    LeaveJournal(dir, 6, 30000);
    Corrupt(dir, d.what);
    auto rec = RecoverTrial(dir);
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    EXPECT_EQ(rec->steps_recovered, d.recovered);
    EXPECT_EQ(rec->steps_lost, d.lost);
    ASSERT_EQ(rec->problems.size(), static_cast<size_t>(d.lost));
    EXPECT_NE(rec->problems[0].find("step " + std::to_string(d.first_lost)), std::string::npos)
        << rec->problems[0];
    CheckSteps(dir, d.recovered, 30000);
    // The loss is recorded in the trial.
    auto marker = Env::Default()->ReadFile(dir + "/incomplete_worker_0.json");
    ASSERT_TRUE(marker.ok());
    auto j = nlohmann::json::parse(*marker);
    EXPECT_EQ(j["steps_failed"], d.lost);
    EXPECT_EQ(j["first_lost_step"], d.first_lost);
    EXPECT_EQ(j["final"], true);
  }
}

TEST(JournalTest, GarbageLogIsIgnored) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t";
  ASSERT_TRUE(Env::Default()->CreateDirs(journal_format::JournalDir(dir)).ok());
  ASSERT_TRUE(Env::Default()
                  ->WriteFileAtomic(journal_format::LogPath(dir, "w"), Pattern(100000, 1), false)
                  .ok());
  ASSERT_EQ(::symlink("/dev/zero", journal_format::LogPath(dir, "z").c_str()), 0);
  auto rec = RecoverTrial(dir);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->steps_recovered, 0);
  EXPECT_EQ(rec->steps_lost, 0);
}

// A writer in a child process tells the parent each step it handed over (EndStep returned),
// and is killed at once: every step it told of is in the trial after recovery.
TEST(JournalTest, SigkillLosesNoHandedOverStep) {
  for (int kill_after : {1, 7, 23}) {
    SCOPED_TRACE(kill_after);
    TempDir tmp;
    const std::string dir = tmp.path() + "/t";
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      WriterOptions opts;
      opts.quiet = true;
      opts.io_threads = 1;
      opts.max_queue_steps = 200;  // a deep backlog: the I/O thread lags far behind
      auto w = TrialWriter::Open(dir, Journaled(opts));
      if (!w.ok()) ::_exit(2);
      for (int64_t s = 0;; ++s) {
        (void)(*w)->BeginStep(s, Mode::kTrain, s);
        const std::string data = Pattern(1 << 20, static_cast<uint32_t>(s % 5));
        (void)(*w)->AddTensor("x", U8(data));
        (void)(*w)->AddShape("x", {1 << 20});
        (void)(*w)->EndStep();
        const int64_t done = s;
        if (::write(fds[1], &done, sizeof(done)) != sizeof(done)) ::_exit(3);
      }
    }
    ::close(fds[1]);
    int64_t last = -1;
    while (last + 1 < kill_after) {
      ASSERT_EQ(::read(fds[0], &last, sizeof(last)), static_cast<ssize_t>(sizeof(last)));
    }
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ::close(fds[0]);
    auto rec = RecoverTrial(dir);
    ASSERT_TRUE(rec.ok());
    EXPECT_EQ(rec->steps_lost, 0);
    auto steps = ReadTrialChecked(Env::Default(), dir);
    ASSERT_GE(steps.size(), static_cast<size_t>(kill_after));
    for (auto& [s, rs] : steps) {
      EXPECT_EQ(rs.tensors["x"].bytes, Pattern(1 << 20, static_cast<uint32_t>(s % 5))) << s;
    }
    int64_t expect = 0;
    for (auto& [s, rs] : steps) EXPECT_EQ(s, expect++);  // a prefix: no gap
    EXPECT_FALSE(JournalFilesLeft(dir));
  }
}

}  // namespace
}  // namespace trainscope
