// OutDirLock (out_dir_lock.h) on a real folder, in one process: hooks of the process share a
// folder's locks, the run's own trial and other Envs take none, a held worker lock is named to
// a `trainscope run`, and it is released with the last hook. Two processes: the Python suite
// (tests/python/test_hook_out_dir_lock.py).
#include "trainscope/out_dir_lock.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "actions/test_util.h"
#include "trainscope/hook.h"

namespace trainscope::capture {
namespace {

using testing::TempDir;

// Unsets a variable for the test's scope (restoring it after).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      ::unsetenv(name_);
    } else {
      ::setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(OutDirLockTest, HooksOfOneProcessShareItAndARunIsToldWhoHoldsIt) {
  ScopedEnv run("TRAINSCOPE_RUN", nullptr), lock_env("TRAINSCOPE_LOCK", nullptr);
  TempDir tmp;
  const std::string out = tmp.path() + "/trial";
  auto a = OutDirLock::Acquire(out, "worker_0", 1);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE((*a)->held());
  auto b = OutDirLock::Acquire(out, "worker_0", 1);  // the same process: shared
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto c = OutDirLock::Acquire(out, "worker_1", 2);  // another worker: its own lock
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::string writers = DescribeHookWriters(out);
  EXPECT_NE(writers.find("pid " + std::to_string(::getpid()) + " on "), std::string::npos)
      << writers;
  EXPECT_NE(writers.find("writing worker_0"), std::string::npos) << writers;
  EXPECT_NE(writers.find("writing worker_1"), std::string::npos) << writers;
  a->reset();
  EXPECT_NE(DescribeHookWriters(out).find("writing worker_0"), std::string::npos)
      << "released while another hook of the process still holds it";
  b->reset();
  c->reset();
  EXPECT_EQ(DescribeHookWriters(out), "");
}

TEST(OutDirLockTest, NoLockForTheRunsOwnTrialOrAnotherEnvOrWhenTurnedOff) {
  TempDir tmp;
  const std::string out = tmp.path() + "/trial";
  {
    ScopedEnv run("TRAINSCOPE_RUN", "1"), dir("TRAINSCOPE_OUT_DIR", (out + "/.").c_str());
    ASSERT_TRUE(Env::Default()->CreateDirs(out).ok());
    auto l = OutDirLock::Acquire(out, "worker_0", 1);
    ASSERT_TRUE(l.ok());
    EXPECT_FALSE((*l)->held());
  }
  {
    ScopedEnv run("TRAINSCOPE_RUN", "1"), dir("TRAINSCOPE_OUT_DIR", tmp.path().c_str());
    auto l = OutDirLock::Acquire(out, "worker_0", 1);  // under a run, another folder: locked
    ASSERT_TRUE(l.ok());
    EXPECT_TRUE((*l)->held());
  }
  {
    ScopedEnv off("TRAINSCOPE_LOCK", "0");
    auto l = OutDirLock::Acquire(out, "worker_0", 1);
    ASSERT_TRUE(l.ok());
    EXPECT_FALSE((*l)->held());
  }
  FaultInjectionEnv faults(Env::Default());
  auto l = OutDirLock::Acquire(tmp.path() + "/other", "worker_0", 1, &faults);
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE((*l)->held());
  EXPECT_FALSE(Env::Default()->FileExists(tmp.path() + "/other/.trainscope"));
}

TEST(OutDirLockTest, TheOwnerIsDescribedFromItsLine) {
  EXPECT_EQ(DescribeLockOwner(R"({"pid":42,"host":"box","started":"T","command":"python a.py",)"
                              R"("worker":"worker_3","world_size":4})",
                              "?"),
            "pid 42 on box, started T, running: python a.py, writing worker_3");
  EXPECT_EQ(DescribeLockOwner(R"({"pid":7,"host":"h","started":"T","command":["a","b"]})", "?"),
            "pid 7 on h, started T, running: a b");
  EXPECT_EQ(DescribeLockOwner("", "nobody yet"), "nobody yet");
  EXPECT_EQ(DescribeLockOwner("[1]", "nobody yet"), "nobody yet");
}

TEST(OutDirLockTest, AHookTakesItAndClosingReleasesIt) {
  ScopedEnv run("TRAINSCOPE_RUN", nullptr), lock_env("TRAINSCOPE_LOCK", nullptr);
  TempDir tmp;
  const std::string out = tmp.path() + "/trial";
  HookConfig c;
  c.out_dir = out;
  c.quiet = true;
  c.rank = 0;
  c.world_size = 1;
  auto hook = Hook::Create(c);
  ASSERT_TRUE(hook.ok()) << hook.status().ToString();
  EXPECT_TRUE((*hook)->writes());
  EXPECT_FALSE((*hook)->stats().out_dir_refused);
  EXPECT_NE(DescribeHookWriters(out).find("writing worker_0"), std::string::npos);
  ASSERT_TRUE((*hook)->Close().ok());
  EXPECT_EQ(DescribeHookWriters(out), "");
}

}  // namespace
}  // namespace trainscope::capture
