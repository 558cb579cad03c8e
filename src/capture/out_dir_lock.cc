#include "trainscope/out_dir_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/time_format.h"

namespace trainscope::capture {
namespace {

constexpr const char* kMetaDir = ".trainscope";
constexpr const char* kRunLock = "run.lock";

// The locks this process holds, by worker lock path: shared by its hooks.
struct Held {
  int run_fd = -1;
  int worker_fd = -1;
  int refs = 0;
};
std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, Held>& Table() {
  static auto* table = new std::map<std::string, Held>();  // never destroyed: atexit order
  return *table;
}

std::string Real(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

std::string ReadOwner(int fd) {
  char buf[4096];
  const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

std::string Command() {
  std::string out;
  char buf[4096];
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  for (ssize_t i = 0; i < n; ++i) out += buf[i] == '\0' ? ' ' : buf[i];
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

int OpenLockFile(const std::string& path) {
  return ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
}

constexpr const char* kWhatToDo =
    "; this hook saves nothing (the training goes on). One training writes an out_dir at a "
    "time: give this one another out_dir, or wait for the other to end. The ranks of one "
    "multi-worker training share a trial, each as its own worker (RANK/WORLD_SIZE, "
    "torch.distributed); TRAINSCOPE_LOCK=0 turns the lock off (smdebug's behaviour: the second "
    "writer overwrites the first)";

}  // namespace

std::string DescribeLockOwner(const std::string& text, const std::string& fallback) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return fallback;
  auto str = [&](const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string("?");
  };
  std::string owner =
      "pid " +
      (j.contains("pid") && j["pid"].is_number_integer() ? std::to_string(j["pid"].get<int64_t>())
                                                         : std::string("?")) +
      " on " + str("host") + ", started " + str("started");
  if (j.contains("command")) {
    std::string cmd;
    if (j["command"].is_array()) {
      for (const auto& a : j["command"]) {
        cmd += (cmd.empty() ? "" : " ") + (a.is_string() ? a.get<std::string>() : a.dump());
      }
    } else if (j["command"].is_string()) {
      cmd = j["command"].get<std::string>();
    }
    owner += ", running: " + cmd;
  }
  if (j.contains("worker") && j["worker"].is_string()) {
    owner += ", writing " + j["worker"].get<std::string>();
  }
  return owner;
}

std::string DescribeHookWriters(const std::string& out_dir) {
  const std::string meta = JoinPath(out_dir, kMetaDir);
  std::vector<std::string> names;
  if (DIR* d = ::opendir(meta.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind("worker_", 0) == 0 && n.size() > 5 && n.substr(n.size() - 5) == ".lock") {
        names.push_back(n);
      }
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) {
    const std::string path = JoinPath(meta, n);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
      ::close(fd);  // nobody holds it
      continue;
    }
    out += (out.empty() ? "" : "; ") + DescribeLockOwner(ReadOwner(fd), "a hook (" + path + ")");
    ::close(fd);
  }
  return out;
}

std::optional<std::string> DescribeFolderWriters(const std::string& out_dir) {
  const std::string path = JoinPath(JoinPath(out_dir, kMetaDir), kRunLock);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  std::string who;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      who = DescribeHookWriters(out_dir);
      if (who.empty()) who = "a `trainscope run` (lock " + path + ")";
    }
  }  // else nobody holds it: closing releases the probe
  ::close(fd);
  return who;
}

Result<std::unique_ptr<OutDirLock>> OutDirLock::Acquire(const std::string& out_dir,
                                                        const std::string& worker, int world_size,
                                                        Env* env) {
  const char* off = std::getenv("TRAINSCOPE_LOCK");
  if (env == nullptr) env = Env::Default();
  if ((off != nullptr && std::string(off) == "0") || env != Env::Default()) {
    return std::unique_ptr<OutDirLock>(new OutDirLock(""));
  }
  const std::string meta = JoinPath(out_dir, kMetaDir);
  TS_RETURN_IF_ERROR(env->CreateDirs(meta));
  const std::string real_out = Real(out_dir);
  const char* run = std::getenv("TRAINSCOPE_RUN");
  const char* run_out = std::getenv("TRAINSCOPE_OUT_DIR");
  if (run != nullptr && std::string(run) == "1" && run_out != nullptr &&
      Real(run_out) == real_out) {
    return std::unique_ptr<OutDirLock>(new OutDirLock(""));  // the run's own trial
  }
  const std::string run_path = JoinPath(JoinPath(real_out, kMetaDir), kRunLock);
  const std::string key = JoinPath(JoinPath(real_out, kMetaDir), worker + ".lock");

  std::lock_guard<std::mutex> lock(Mu());
  auto& table = Table();
  if (auto it = table.find(key); it != table.end()) {
    ++it->second.refs;
    return std::unique_ptr<OutDirLock>(new OutDirLock(key));
  }
  Held h;
  h.run_fd = OpenLockFile(run_path);
  if (h.run_fd < 0) {
    return Status::IOError("cannot open " + run_path + ": " + std::strerror(errno));
  }
  if (::flock(h.run_fd, LOCK_SH | LOCK_NB) != 0) {
    const int err = errno;
    const std::string owner = ReadOwner(h.run_fd);
    ::close(h.run_fd);
    if (err != EWOULDBLOCK) {
      return Status::IOError("cannot lock " + run_path + ": " + std::strerror(err));
    }
    return Status::Unavailable(out_dir + " is the trial of a running `trainscope run` (" +
                               DescribeLockOwner(owner, "its owner has not written its name yet") +
                               "; lock " + run_path + ")" + kWhatToDo);
  }
  h.worker_fd = OpenLockFile(key);
  if (h.worker_fd < 0) {
    const int err = errno;
    ::close(h.run_fd);
    return Status::IOError("cannot open " + key + ": " + std::strerror(err));
  }
  if (::flock(h.worker_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string owner = ReadOwner(h.worker_fd);
    ::close(h.worker_fd);
    ::close(h.run_fd);
    if (err != EWOULDBLOCK) {
      return Status::IOError("cannot lock " + key + ": " + std::strerror(err));
    }
    return Status::Unavailable(out_dir + " is being written by another training (" +
                               DescribeLockOwner(owner, "its owner has not written its name yet") +
                               "; lock " + key + ")" + kWhatToDo);
  }
  char host[256] = "?";
  (void)::gethostname(host, sizeof(host) - 1);  // on failure the name stays "?"
  nlohmann::json j{{"pid", static_cast<int64_t>(::getpid())},
                   {"host", host},
                   {"started", FormatTimeUtc(static_cast<int64_t>(env->NowMicros()))},
                   {"command", Command()},
                   {"worker", worker},
                   {"world_size", world_size}};
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (::ftruncate(h.worker_fd, 0) != 0 || ::pwrite(h.worker_fd, text.data(), text.size(), 0) < 0) {
    // The lock holds; only its description is missing.
  }
  h.refs = 1;
  table[key] = h;
  return std::unique_ptr<OutDirLock>(new OutDirLock(key));
}

OutDirLock::~OutDirLock() {
  if (key_.empty()) return;
  std::lock_guard<std::mutex> lock(Mu());
  auto& table = Table();
  auto it = table.find(key_);
  if (it == table.end() || --it->second.refs > 0) return;
  ::close(it->second.worker_fd);  // closing the last descriptor releases the flock
  ::close(it->second.run_fd);
  table.erase(it);
}

}  // namespace trainscope::capture
