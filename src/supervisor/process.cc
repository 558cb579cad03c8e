#include "trainscope/process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

extern char** environ;

namespace trainscope {
namespace {

// The environment the child gets: ours, with `add`'s keys replaced or appended.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& add) {
  std::vector<std::string> out;
  auto key_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& a : add) replaced |= key_of(a) == key_of(entry);
    if (!replaced) out.push_back(entry);
  }
  for (const auto& a : add) out.push_back(a);
  return out;
}

void WriteStderr(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;  // nothing to do if stderr is gone
}

}  // namespace

Result<Process> Process::Start(const ProcessOptions& options) {
  if (options.argv.empty()) return Status::InvalidArgument("Process::Start: no command");
  // Everything the child needs is built before fork: after it, in a process with other threads,
  // the child may only call async-signal-safe functions.
  const std::vector<std::string> env = ChildEnvironment(options.env_add);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> argv;
  argv.reserve(options.argv.size() + 1);
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string cannot_start = "trainscope run: cannot start '" + options.argv[0] + "': ";

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return Status::IOError(std::string("fork failed: ") + std::strerror(errno));
  if (pid > 0) {
    // Also done by the child (whichever runs first), so that signalling the group right after
    // Start reaches it.
    if (options.own_group) setpgid(pid, pid);
    if (options.foreground) tcsetpgrp(STDIN_FILENO, pid);
    return Process(pid, options.own_group);
  }
  if (options.die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
  }
  if (options.own_group) setpgid(0, 0);
  // setpriority is one system call (glibc's wrapper takes no lock): before exec, so that every
  // thread the child makes inherits it. A failure leaves the child at our priority.
  if (options.nice > 0) {
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, 0);
    if (errno == 0) (void)setpriority(PRIO_PROCESS, 0, now + options.nice);
  }
  if (options.stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
  // The child must own the terminal before it reads from it (pdb, input()), or SIGTTIN stops it.
  if (options.foreground) tcsetpgrp(STDIN_FILENO, getpid());
  // The supervisor ignores SIGTTOU and blocks nothing the child should get; exec keeps ignored
  // signals ignored and the signal mask, so both are reset here.
  signal(SIGTTOU, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  execvpe(argv[0], argv.data(), envp.data());
  const int err = errno;
  WriteStderr(cannot_start.c_str());
  WriteStderr(std::strerror(err));
  WriteStderr("\n");
  _exit(127);
}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      own_group_(other.own_group_),
      wait_status_(other.wait_status_) {}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    own_group_ = other.own_group_;
    wait_status_ = other.wait_status_;
  }
  return *this;
}

Process::~Process() { Release(); }

void Process::Release() {
  if (pid_ > 0 && !wait_status_) {
    Signal(SIGKILL);
    Wait();
  }
  pid_ = -1;
}

bool Process::Poll() {
  if (wait_status_) return true;
  if (pid_ <= 0) return false;
  int ws = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &ws, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) wait_status_ = ws;
  return wait_status_.has_value();
}

int Process::Wait() {
  if (wait_status_) return *wait_status_;
  int ws = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &ws, 0);
  } while (r < 0 && errno == EINTR);
  wait_status_ = r == pid_ ? ws : 0;
  return *wait_status_;
}

void Process::Signal(int sig) {
  if (pid_ <= 0) return;
  if (own_group_) {
    // Linux gives no new process a pid that is still a live group's id, so the group is still
    // the child's after the child itself was reaped (its own children may live on in it).
    kill(-pid_, sig);
  } else if (!wait_status_) {
    kill(pid_, sig);
  }
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return 128 + (WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0);
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
           strsignal(WTERMSIG(wait_status)) + ")";
  }
  return "exited with code " +
         std::to_string(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
}

}  // namespace trainscope
