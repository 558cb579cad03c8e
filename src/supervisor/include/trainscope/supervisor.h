// The supervisor of a training run (`trainscope run` is a thin layer over it): starts the
// training command and one worker process per rule, forwards SIGINT/SIGTERM to the training,
// stops a training that ignores its trial's stop signal, ends the trial when the training ends,
// gives the workers a time limit after it and kills the ones that overrun it.
//
// What the supervisor shows and decides about rules stays with the caller, through the
// callbacks of SuperviseEvents (the status feed, the live view, a worker's failure).
//
// Thread safety: Supervise runs on the calling thread and calls every callback from it. One
// Supervise (and one SignalForwarder) at a time per process: signal handlers are process-wide
// (Supervise also handles SIGCHLD while it runs, to wake when a child ends).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "trainscope/process.h"
#include "trainscope/status.h"

namespace trainscope {

// Installs handlers for SIGINT and SIGTERM that only record the signal; Forward passes it on.
// The destructor restores the handlers that were there before.
class SignalForwarder {
 public:
  SignalForwarder();
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  // Sends a signal received since the last call to `target` (to its group when it has one):
  // the first two as they came, any later one as SIGKILL (a third Ctrl-C ends a training that
  // traps the first two). Returns the signal sent, or 0 when none was pending.
  int Forward(Process* target);
  // Signals forwarded so far.
  int forwarded() const { return forwarded_; }

 private:
  int forwarded_ = 0;
};

// Worker processes, each under a name (one per rule), with a time limit once told to stop.
class WorkerGroup {
 public:
  WorkerGroup() = default;
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;
  ~WorkerGroup() = default;  // workers still running are killed (Process's destructor)

  // Starts a worker. IOError when fork fails (the group is unchanged). REQUIRES: `name` unique.
  Status Start(const std::string& name, const ProcessOptions& options);
  // Without blocking: calls on_end(name, wait_status) for each worker that has ended since the
  // last call, and forgets it.
  void ReapEnded(const std::function<void(const std::string&, int)>& on_end);
  // SIGTERM to every worker, then up to `grace` for them to end (a worker then writes its own
  // final status); SIGKILL to the ones still running, which are passed to on_killed(name).
  // Afterwards the group is empty.
  void StopAll(std::chrono::milliseconds grace,
               const std::function<void(const std::string&)>& on_killed);
  bool empty() const { return workers_.empty(); }
  size_t size() const { return workers_.size(); }

 private:
  std::map<std::string, Process> workers_;
};

struct SuperviseOptions {
  ProcessOptions training;  // the training command; own_group is set by Supervise
  std::map<std::string, ProcessOptions> workers;  // by name; started after the training
  // The trial folder: its stop signal is watched and its end marker (training_job_end.ts) is
  // written when the training ends without one (a crash, or a training that never started its
  // hook: the rules learn at once that no more data will come).
  std::string trial;
  // How long a training may run on once its trial's stop signal appears; then SIGTERM.
  std::chrono::duration<double> stop_grace = std::chrono::seconds(30);
  // How long the workers may run on once the training has ended; then StopAll.
  std::chrono::duration<double> workers_timeout = std::chrono::seconds(60);
  // StopAll's grace between SIGTERM and SIGKILL.
  std::chrono::milliseconds worker_kill_grace{5000};
  // The longest wait between two looks at the training, the workers and the stop signal; a
  // child process that ends (SIGCHLD) ends the wait at once, so the run's end is not delayed by
  // it.
  std::chrono::milliseconds poll_interval{200};
};

// Each callback is optional and runs on Supervise's thread.
struct SuperviseEvents {
  // The training has started (its pid: e.g. a system sampler follows its process tree).
  std::function<void(pid_t)> on_training_started;
  // The training has ended (after the trial's end marker is written).
  std::function<void(int wait_status)> on_training_ended;
  // A worker could not be started (fork failed): the error.
  std::function<void(const std::string& name, const Status&)> on_worker_not_started;
  // A worker ended by itself (its wait status).
  std::function<void(const std::string& name, int wait_status)> on_worker_ended;
  // A worker overran workers_timeout and worker_kill_grace and was killed.
  std::function<void(const std::string& name)> on_worker_killed;
  // The trial's stop signal appeared while the training ran.
  std::function<void()> on_stop_requested;
  // The training did not stop within stop_grace of the stop signal: SIGTERM is being sent.
  std::function<void()> on_stop_grace_expired;
  // Once per poll (every poll_interval): seconds since the training started.
  std::function<void(double elapsed_s)> on_poll;
};

struct SupervisedRun {
  int training_wait_status = 0;
  int training_exit_code = 0;        // ExitCodeOf(training_wait_status)
  bool stop_requested = false;       // the stop signal appeared while the training ran
  bool training_terminated = false;  // it got SIGTERM after stop_grace
  int signals_forwarded = 0;         // SIGINT/SIGTERM received and passed to the training
};

// Runs the training and the workers to their end as described above and returns how the
// training ended. While it runs, SIGINT and SIGTERM reach the training's process group (a
// SignalForwarder), not this process, and SIGTTOU is ignored (a supervisor writing to the
// terminal from the background is not stopped); both are restored before it returns. When
// options.training.foreground, the training's group gets the terminal and it is taken back when
// the training ends. IOError only when the training cannot be started (fork failed).
Result<SupervisedRun> Supervise(const SuperviseOptions& options, const SuperviseEvents& events);

}  // namespace trainscope
