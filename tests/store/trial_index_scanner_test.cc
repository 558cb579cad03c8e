// IndexScanner: each index file handed out once, by listing (MemEnv, POSIX) or inotify.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "store/index_scanner.h"
#include "trial_test_util.h"

namespace trainscope {
namespace {

using testing::PutFile;
using testing::TempDir;

std::vector<int64_t> StepsOf(const std::vector<FoundIndexFile>& f) {
  std::vector<int64_t> out;
  for (const auto& x : f) out.push_back(x.step);
  return out;
}

void PutIndex(Env* env, const std::string& root, int64_t step, const std::string& worker) {
  char name[64];
  snprintf(name, sizeof(name), "index/%09lld/%012lld_%s.json", static_cast<long long>(step / 1000),
           static_cast<long long>(step), worker.c_str());
  PutFile(env, JoinPath(root, name), "{}");
}

TEST(IndexScannerTest, ListingHandsOutEachFileOnce) {
  auto env = NewMemEnv();
  const std::string root = "/trial";
  ASSERT_TRUE(env->CreateDirs(root).ok());
  IndexScanner sc(env.get(), root, 0, -1);
  ASSERT_TRUE(sc.Init(/*use_inotify=*/true).ok());
  EXPECT_FALSE(sc.watching());  // MemEnv cannot watch
  std::vector<FoundIndexFile> found;
  ASSERT_TRUE(sc.List(0, &found).ok());  // no index/ yet
  EXPECT_TRUE(found.empty());
  PutIndex(env.get(), root, 2, "worker_1");
  PutIndex(env.get(), root, 2, "worker_0");
  PutIndex(env.get(), root, 0, "worker_0");
  PutFile(env.get(), root + "/index/000000000/000000000004_worker_0.json.tmp", "{");
  PutFile(env.get(), root + "/index/000000000/notes.txt", "x");
  ASSERT_TRUE(sc.List(0, &found).ok());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(StepsOf(found), (std::vector<int64_t>{0, 2, 2}));
  EXPECT_EQ(found[1].worker, "worker_0");
  EXPECT_EQ(found[2].worker, "worker_1");
  EXPECT_EQ(found[0].path, root + "/index/000000000/000000000000_worker_0.json");
  found.clear();
  ASSERT_TRUE(sc.List(0, &found).ok());
  EXPECT_TRUE(found.empty());
  PutIndex(env.get(), root, 1000, "worker_0");  // a new folder
  PutIndex(env.get(), root, 4, "worker_0");
  ASSERT_TRUE(sc.List(3, &found).ok());
  EXPECT_EQ(StepsOf(found), (std::vector<int64_t>{4, 1000}));
  EXPECT_EQ(sc.num_handed_out(), 5u);
  EXPECT_FALSE(sc.end_marker_seen());
  PutFile(env.get(), root + "/training_job_end.ts", "");
  found.clear();
  ASSERT_TRUE(sc.List(1001, &found).ok());
  EXPECT_TRUE(sc.end_marker_seen());
}

TEST(IndexScannerTest, RangeLimitsSteps) {
  auto env = NewMemEnv();
  const std::string root = "/trial";
  for (int64_t s : {0, 5, 10, 999, 1000, 2500}) PutIndex(env.get(), root, s, "worker_0");
  IndexScanner sc(env.get(), root, 5, 1000);
  ASSERT_TRUE(sc.Init(false).ok());
  std::vector<FoundIndexFile> found;
  ASSERT_TRUE(sc.List(0, &found).ok());
  EXPECT_EQ(StepsOf(found), (std::vector<int64_t>{5, 10, 999}));
}

TEST(IndexScannerTest, InotifySeesNewFoldersAndFiles) {
  TempDir dir;
  Env* env = Env::Default();
  PutIndex(env, dir.path(), 1, "worker_0");  // before the watch
  IndexScanner sc(env, dir.path(), 0, -1);
  ASSERT_TRUE(sc.Init(true).ok());
  ASSERT_TRUE(sc.watching());
  std::vector<FoundIndexFile> found;
  ASSERT_TRUE(sc.Drain(&found).ok());
  EXPECT_EQ(StepsOf(found), (std::vector<int64_t>{1}));
  found.clear();
  PutIndex(env, dir.path(), 3, "worker_0");
  PutIndex(env, dir.path(), 2000, "worker_0");  // new folder: watched, then listed
  // Events are queued when the syscalls return, but a new folder's files may need a second
  // round (its watch is added while handling the first). Wait for them with a generous deadline.
  for (int i = 0; i < 100 && found.size() < 2; ++i) {
    std::vector<DirChange> changes;
    Status ws = sc.WaitEvents(std::chrono::milliseconds(50), &changes);
    ASSERT_TRUE(sc.HandleEvents(ws, changes, &found).ok());
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.step < b.step; });
  EXPECT_EQ(StepsOf(found), (std::vector<int64_t>{3, 2000}));
  found.clear();
  PutFile(env, dir.path() + "/training_job_end.ts", "");
  for (int i = 0; i < 100 && !sc.end_marker_seen(); ++i) {
    std::vector<DirChange> changes;
    Status ws = sc.WaitEvents(std::chrono::milliseconds(50), &changes);
    ASSERT_TRUE(sc.HandleEvents(ws, changes, &found).ok());
  }
  EXPECT_TRUE(sc.end_marker_seen());
  EXPECT_TRUE(found.empty());
}

TEST(IndexScannerTest, InotifyIndexFolderCreatedAfterStart) {
  TempDir dir;
  Env* env = Env::Default();
  IndexScanner sc(env, dir.path(), 0, -1);
  ASSERT_TRUE(sc.Init(true).ok());
  ASSERT_TRUE(sc.watching());
  std::vector<FoundIndexFile> found;
  ASSERT_TRUE(sc.Drain(&found).ok());
  EXPECT_TRUE(found.empty());
  for (int64_t s = 0; s < 5; ++s) PutIndex(env, dir.path(), s, "worker_0");
  for (int i = 0; i < 100 && found.size() < 5; ++i) {
    std::vector<DirChange> changes;
    Status ws = sc.WaitEvents(std::chrono::milliseconds(50), &changes);
    ASSERT_TRUE(sc.HandleEvents(ws, changes, &found).ok());
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.step < b.step; });
  EXPECT_EQ(StepsOf(found), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace trainscope
