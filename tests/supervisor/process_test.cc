// Process: real children started through /bin/sh; how they end (exit codes, signals, a command
// that cannot run), what they inherit (environment, stdout), and their process group.
#include "trainscope/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "store/trial_test_util.h"

namespace trainscope {
namespace {

using testing::TempDir;

Process StartShell(const std::string& script, ProcessOptions options = {}) {
  options.argv = {"/bin/sh", "-c", script};
  auto p = Process::Start(options);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ProcessTest, ExitCodesAsAShellReportsThem) {
  for (int code : {0, 1, 3, 42, 255}) {
    Process p = StartShell("exit " + std::to_string(code));
    const int ws = p.Wait();
    EXPECT_TRUE(p.ended());
    EXPECT_EQ(ExitCodeOf(ws), code);
    EXPECT_EQ(DescribeWaitStatus(ws), "exited with code " + std::to_string(code));
  }
}

// `nice` adds to the child's niceness (the rule workers yield the cores to the training); the
// child's threads inherit it. The shell's `nice` prints its own niceness.
TEST(ProcessTest, NiceLowersTheChildsPriority) {
  errno = 0;
  const int ours = getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  if (ours > 14) GTEST_SKIP() << "this test already runs at niceness " << ours;
  ProcessOptions o;
  o.nice = 5;
  Process p = StartShell("exit $(nice)", o);
  EXPECT_EQ(ExitCodeOf(p.Wait()), ours + 5);
  Process q = StartShell("exit $(nice)");
  EXPECT_EQ(ExitCodeOf(q.Wait()), ours);
}

TEST(ProcessTest, KilledBySignalIs128PlusTheSignal) {
  Process p = StartShell("kill -KILL $$");
  const int ws = p.Wait();
  EXPECT_EQ(ExitCodeOf(ws), 128 + SIGKILL);
  EXPECT_EQ(DescribeWaitStatus(ws), "was killed by signal 9 (Killed)");
}

TEST(ProcessTest, ACommandThatCannotRunExits127) {
  ProcessOptions o;
  o.argv = {"/nonexistent/trainscope-no-such-program"};
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ExitCodeOf(p->Wait()), 127);
}

TEST(ProcessTest, NoCommandIsRefused) {
  auto p = Process::Start(ProcessOptions{});
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
}

TEST(ProcessTest, PollDoesNotBlockAndSeesTheEnd) {
  TempDir dir;
  const std::string go = dir.path() + "/go";
  Process p = StartShell("while [ ! -e '" + go + "' ]; do sleep 0.02; done; exit 7");
  EXPECT_FALSE(p.Poll());
  EXPECT_FALSE(p.ended());
  std::ofstream(go).put('x');
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!p.Poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(p.ended());
  EXPECT_EQ(ExitCodeOf(p.wait_status()), 7);
}

TEST(ProcessTest, EnvironmentIsInheritedWithAdditionsReplacingKeys) {
  TempDir dir;
  const std::string out = dir.path() + "/env";
  ::setenv("TS_PROCESS_TEST_KEEP", "kept", 1);
  ::setenv("TS_PROCESS_TEST_REPLACE", "old", 1);
  ProcessOptions o;
  o.env_add = {"TS_PROCESS_TEST_REPLACE=new", "TS_PROCESS_TEST_ADD=a=b"};
  Process p = StartShell(
      "echo \"$TS_PROCESS_TEST_KEEP $TS_PROCESS_TEST_REPLACE "
      "$TS_PROCESS_TEST_ADD\" > '" +
          out + "'",
      o);
  EXPECT_EQ(ExitCodeOf(p.Wait()), 0);
  EXPECT_EQ(ReadAll(out), "kept new a=b\n");
  ::unsetenv("TS_PROCESS_TEST_KEEP");
  ::unsetenv("TS_PROCESS_TEST_REPLACE");
}

TEST(ProcessTest, OwnGroupSignalReachesTheWholeTree) {
  TempDir dir;
  const std::string ready = dir.path() + "/ready";
  ProcessOptions o;
  o.own_group = true;
  // The shell waits on a grandchild; SIGTERM to the group ends both.
  Process p = StartShell("sleep 60 & touch '" + ready + "'; wait", o);
  EXPECT_EQ(getpgid(p.pid()), p.pid());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::access(ready.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  p.Signal(SIGTERM);
  EXPECT_EQ(ExitCodeOf(p.Wait()), 128 + SIGTERM);
  // No process is left in the group (the grandchild got SIGTERM too).
  for (int i = 0; i < 500 && ::kill(-p.pid(), 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(::kill(-p.pid(), 0), 0);
}

TEST(ProcessTest, DestroyingARunningProcessKillsAndReapsIt) {
  pid_t pid;
  {
    // exec: the killed process is sleep itself, so no orphan keeps the test's output open.
    Process p = StartShell("exec sleep 60");
    pid = p.pid();
    Process moved = std::move(p);  // the moved-from object owns nothing
  }
  // Reaped: no zombie with that pid is ours to wait for.
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace trainscope
