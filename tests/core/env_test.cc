#include "trainscope/env.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace trainscope {
namespace {

namespace fs = std::filesystem;

// Runs every test against the POSIX Env (in a fresh temp folder) and the in-memory Env.
class EnvTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      env_ = Env::Default();
      char tmpl[] = "/tmp/ts_env_test_XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      root_ = tmpl;
    } else {
      mem_ = NewMemEnv();
      env_ = mem_.get();
      root_ = "/mem";
      ASSERT_TRUE(env_->CreateDirs(root_).ok());
    }
  }
  void TearDown() override {
    if (GetParam()) fs::remove_all(root_);
  }
  std::string P(const std::string& rel) { return JoinPath(root_, rel); }

  std::unique_ptr<Env> mem_;
  Env* env_ = nullptr;
  std::string root_;
};

TEST_P(EnvTest, WriteMapReadRename) {
  ASSERT_TRUE(env_->CreateDirs(P("a/b/c")).ok());
  EXPECT_TRUE(env_->IsDirectory(P("a/b")));
  auto f = env_->NewWritableFile(P("a/b/c/x.tmp"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::string big(200000, 'z');
  ASSERT_TRUE((*f)->Append("hello ").ok());
  ASSERT_TRUE((*f)->Append(big).ok());
  EXPECT_EQ((*f)->Size(), 6 + big.size());
  ASSERT_TRUE((*f)->Close().ok());
  ASSERT_TRUE(env_->RenameFile(P("a/b/c/x.tmp"), P("a/b/c/x")).ok());
  EXPECT_FALSE(env_->FileExists(P("a/b/c/x.tmp")));
  auto region = env_->MapFile(P("a/b/c/x"));
  ASSERT_TRUE(region.ok());
  EXPECT_EQ((*region)->size(), 6 + big.size());
  EXPECT_EQ((*region)->view().substr(0, 6), "hello ");
  auto range = env_->ReadRange(P("a/b/c/x"), 3, 5);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, "lo zz");
  EXPECT_EQ(*env_->GetFileSize(P("a/b/c/x")), 6 + big.size());
  // The region outlives removal of the file.
  ASSERT_TRUE(env_->RemoveFile(P("a/b/c/x")).ok());
  EXPECT_EQ((*region)->view().substr(0, 5), "hello");
}

TEST_P(EnvTest, ChildrenAndMissing) {
  ASSERT_TRUE(env_->CreateDirs(P("d/sub")).ok());
  ASSERT_TRUE(env_->WriteFileAtomic(P("d/f1"), "1", false).ok());
  ASSERT_TRUE(env_->WriteFileAtomic(P("d/f2"), "22", true).ok());
  auto kids = env_->GetChildren(P("d"));
  ASSERT_TRUE(kids.ok());
  std::sort(kids->begin(), kids->end());
  EXPECT_EQ(*kids, (std::vector<std::string>{"f1", "f2", "sub"}));
  EXPECT_EQ(env_->GetChildren(P("nope")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env_->MapFile(P("nope")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*env_->ReadFile(P("d/f2")), "22");
  EXPECT_FALSE(env_->FileExists(P("d/f2.tmp")));
}

TEST_P(EnvTest, LinkFileGivesASecondNameOnlyOnce) {
  ASSERT_TRUE(env_->WriteFileAtomic(P("a"), "first", false).ok());
  ASSERT_TRUE(env_->WriteFileAtomic(P("b"), "second", false).ok());
  ASSERT_TRUE(env_->LinkFile(P("a"), P("name")).ok());
  EXPECT_EQ(env_->ReadFile(P("name")).value(), "first");
  const Status again = env_->LinkFile(P("b"), P("name"));  // the name is taken: left alone
  EXPECT_EQ(again.code(), StatusCode::kAborted) << again.ToString();
  EXPECT_NE(again.message().find("name"), std::string::npos);
  EXPECT_EQ(env_->ReadFile(P("name")).value(), "first");
  ASSERT_TRUE(env_->RemoveFile(P("a")).ok());  // the other name keeps the bytes
  EXPECT_EQ(env_->ReadFile(P("name")).value(), "first");
  EXPECT_FALSE(env_->LinkFile(P("missing"), P("other")).ok());
  EXPECT_FALSE(env_->FileExists(P("other")));
}

TEST_P(EnvTest, CreateExclusiveOnlyOnce) {
  EXPECT_TRUE(env_->CreateExclusive(P("claim")).ok());
  EXPECT_EQ(env_->CreateExclusive(P("claim")).code(), StatusCode::kAborted);
}

TEST_P(EnvTest, FaultInjectionFullDiskNamesPathAndErrno) {
  FaultInjectionEnv fenv(env_);
  fenv.SetDiskSpaceLeft(10);
  auto f = fenv.NewWritableFile(P("full"));
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE((*f)->Append("12345").ok());
  Status s = (*f)->Append("123456");
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_NE(s.message().find(P("full")), std::string::npos);
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos);
  EXPECT_EQ(fenv.failures(), 1);
  fenv.SetDiskSpaceLeft(-1);
  EXPECT_TRUE((*f)->Append("more").ok());

  fenv.SetSyncFails(true);
  EXPECT_EQ((*f)->Sync().os_errno(), EIO);
  EXPECT_FALSE(fenv.WriteFileAtomic(P("synced"), "x", /*sync=*/true).ok());
  fenv.SetSyncFails(false);
  fenv.SetRenameFails(true);
  EXPECT_FALSE(fenv.WriteFileAtomic(P("renamed"), "x", false).ok());
  EXPECT_FALSE(fenv.FileExists(P("renamed.tmp")));  // cleaned up
  EXPECT_FALSE(fenv.FileExists(P("renamed")));
  fenv.SetRenameFails(false);
  fenv.SetCreateFails(true);
  EXPECT_EQ(fenv.NewWritableFile(P("c")).status().os_errno(), EACCES);
}

INSTANTIATE_TEST_SUITE_P(PosixAndMem, EnvTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Posix" : "Mem"; });

TEST(PosixEnvTest, NotifierSeesFilesRenamedIntoAWatchedFolder) {
  Env* env = Env::Default();
  char tmpl[] = "/tmp/ts_notify_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  auto n = env->NewChangeNotifier();
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE((*n)->Watch(root).ok());
  std::thread writer([&] {
    ASSERT_TRUE(env->WriteFileAtomic(JoinPath(root, "step.json"), "{}", false).ok());
    ASSERT_TRUE(env->CreateDirs(JoinPath(root, "sub")).ok());
  });
  std::vector<DirChange> changes;
  for (int i = 0; i < 100 && changes.size() < 3; ++i) {
    ASSERT_TRUE((*n)->Wait(std::chrono::milliseconds(100), &changes).ok());
  }
  writer.join();
  bool saw_file = false, saw_dir = false;
  for (const auto& c : changes) {
    EXPECT_EQ(c.dir, root);
    if (c.name == "step.json") saw_file = true;
    if (c.name == "sub" && c.is_dir) saw_dir = true;
  }
  EXPECT_TRUE(saw_file);
  EXPECT_TRUE(saw_dir);
  fs::remove_all(root);
}

// A FIFO, a device or a folder where a file is expected is refused at once, naming the path:
// open(2) on a FIFO would wait for a writer for ever, and /dev/zero would be read without end
// (issue 17: an event file that is a FIFO hung value() and `trainscope ls`; a stop file that is
// one would hang the training at its next step boundary).
TEST(PosixEnvTest, ReadersRefuseWhatIsNotARegularFile) {
  Env* env = Env::Default();
  char tmpl[] = "/tmp/ts_special_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string fifo = JoinPath(root, "events.tfevents");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string zero = JoinPath(root, "index.json");
  ASSERT_EQ(symlink("/dev/zero", zero.c_str()), 0);
  const std::string real = JoinPath(root, "real.json");
  ASSERT_TRUE(env->WriteFileAtomic(real, "{}", false).ok());
  const std::string link = JoinPath(root, "link.json");
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  for (const std::string& p : {fifo, zero, root}) {
    auto mapped = env->MapFile(p);
    ASSERT_FALSE(mapped.ok()) << p;
    EXPECT_NE(mapped.status().message().find(p + " is a"), std::string::npos)
        << mapped.status().ToString();
    EXPECT_FALSE(env->ReadFile(p).ok()) << p;
    EXPECT_FALSE(env->ReadRange(p, 0, 16).ok()) << p;
  }
  EXPECT_NE(env->ReadFile(fifo).status().message().find("a FIFO"), std::string::npos);
  EXPECT_NE(env->ReadFile(zero).status().message().find("a device"), std::string::npos);
  // A symlink to a regular file is read as that file.
  EXPECT_EQ(*env->ReadFile(link), "{}");
  EXPECT_EQ((*env->MapFile(link))->size(), 2u);
  fs::remove_all(root);
}

TEST(PathTest, JoinDirnameBasename) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "/b"), "a/b");
  EXPECT_EQ(Dirname("/x/y/z.json"), "/x/y");
  EXPECT_EQ(Dirname("z"), ".");
  EXPECT_EQ(Basename("/x/y/z.json"), "z.json");
  EXPECT_EQ(Basename("/x/y/"), "y");
}

}  // namespace
}  // namespace trainscope
