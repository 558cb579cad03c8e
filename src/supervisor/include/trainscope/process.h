// Process: a child process started with fork/exec, and how it ended. The supervisor
// (`trainscope run`) starts the training and one worker per rule with it.
//
// Thread safety: a Process is not thread-safe; one thread starts, polls and signals it. Start may
// be called while other threads run (the child only calls exec-safe functions before exec).
#pragma once

#include <unistd.h>  // pid_t

#include <optional>
#include <string>
#include <vector>

#include "trainscope/status.h"

namespace trainscope {

// What to start and how the child is placed.
struct ProcessOptions {
  std::vector<std::string> argv;     // argv[0] is looked up on PATH; REQUIRES: not empty
  std::vector<std::string> env_add;  // "KEY=VALUE" entries added to (or replacing in) the
                                     // environment the child inherits
  bool own_group = false;         // in a process group of its own: Signal() then reaches its tree
  bool foreground = false;        // and that group becomes the terminal's foreground (stdin);
                                  // REQUIRES: own_group
  bool die_with_parent = false;   // SIGTERM when the starting process dies (Linux PDEATHSIG)
  bool stdout_to_stderr = false;  // the child's stdout is the parent's stderr
  int nice = 0;  // added to the child's niceness before exec (0..19; e.g. 10: it yields the CPU)
};

class Process {
 public:
  // Forks and execs `options.argv`. IOError when fork fails. A command that cannot be executed
  // (not found, not executable) is started all the same: the child says why on stderr
  // ("trainscope run: cannot start '<argv0>': <reason>") and exits with 127, as a shell does.
  static Result<Process> Start(const ProcessOptions& options);

  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  // A child still running when its Process is destroyed is killed (SIGKILL, to its group when it
  // has one) and reaped: a Process never leaves an orphan or a zombie behind.
  ~Process();

  pid_t pid() const { return pid_; }
  // Without blocking: true once the child has ended (it is then reaped; wait_status() is set).
  bool Poll();
  // Blocks until the child ends; returns its wait status.
  int Wait();
  // Sends `sig` to the child's process group when it has one of its own (also after the child
  // was reaped: what it started may still run in the group), else to the child, and then
  // nothing once it was reaped (its pid may belong to another process by then).
  void Signal(int sig);
  bool ended() const { return wait_status_.has_value(); }
  // waitpid(2)'s status; REQUIRES: ended().
  int wait_status() const { return *wait_status_; }

 private:
  Process(pid_t pid, bool own_group) : pid_(pid), own_group_(own_group) {}
  void Release();

  pid_t pid_ = -1;
  bool own_group_ = false;
  std::optional<int> wait_status_;
};

// A wait status as a shell reports it: the exit code, or 128 + the signal that killed it.
int ExitCodeOf(int wait_status);
// How a process ended, in words: "exited with code 1", "was killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status);

}  // namespace trainscope
