// Test helpers for the actions tests: temporary folders, child processes with a line protocol,
// and a Python interpreter for the loopback test servers (tests/actions/test_servers.py).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base != nullptr ? base : "/tmp") + "/ts_actions_XXXXXX";
    char* p = ::mkdtemp(templ.data());
    path_ = p != nullptr ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The Python that runs the test servers: $TRAINSCOPE_PYTHON, else the active virtual
// environment's, else the checkout's .venv (scripts/setup.sh), else python3 on PATH.
inline std::string TestPython() {
  if (const char* p = std::getenv("TRAINSCOPE_PYTHON"); p != nullptr && p[0] != '\0') return p;
  if (const char* v = std::getenv("VIRTUAL_ENV"); v != nullptr && v[0] != '\0') {
    std::string py = std::string(v) + "/bin/python";
    if (::access(py.c_str(), X_OK) == 0) return py;
  }
  if (std::string py = std::string(TRAINSCOPE_SOURCE_DIR) + "/.venv/bin/python";
      ::access(py.c_str(), X_OK) == 0) {
    return py;
  }
  return "python3";
}

// tests/actions/test_servers.py, beside this header.
inline std::string TestServersScript() {
  return std::string(TRAINSCOPE_SOURCE_DIR) + "/tests/actions/test_servers.py";
}

// A child process whose stdout is read line by line. Killed (SIGKILL) and reaped on destruction.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool started() const { return pid_ > 0 && fd_ >= 0; }

  // The next line of the child's stdout (without '\n'), or nullopt after `timeout` or at EOF.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      struct pollfd p = {fd_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r <= 0) continue;
      char tmp[4096];
      ssize_t n = ::read(fd_, tmp, sizeof(tmp));
      if (n <= 0) return std::nullopt;
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

  // Waits for the child to exit; its exit status, or -1.
  int Wait() {
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, 0) != pid_) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buf_;
};

}  // namespace trainscope::testing
