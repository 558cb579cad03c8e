#include "trainscope/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "trainscope/env.h"
#include "trainscope/stop_signal.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_pending_signal{0};
void RecordSignal(int sig) { g_pending_signal = sig; }

struct sigaction g_old_int, g_old_term;

// The write end of ChildWake's pipe, for its SIGCHLD handler (-1: none).
std::atomic<int> g_child_wake_fd{-1};

void WakeOnChild(int /*sig*/) {
  const int saved = errno;
  const int fd = g_child_wake_fd.load();
  const char byte = 1;
  if (fd >= 0) (void)!::write(fd, &byte, 1);  // full pipe: a wake is pending already
  errno = saved;
}

// Supervise's wait between two polls: up to the poll interval, ended at once when a child
// process ends (a SIGCHLD handler writes to a pipe the wait polls). The training's exit and the
// workers' last verdicts are seen when they happen, not up to a poll interval later. Without
// the pipe (pipe2 failed) it sleeps the interval, as before.
class ChildWake {
 public:
  ChildWake() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    g_child_wake_fd = write_fd_;
    struct sigaction sa {};
    sa.sa_handler = WakeOnChild;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;  // other threads' calls are not interrupted
    sigaction(SIGCHLD, &sa, &old_);
  }
  ~ChildWake() {
    if (read_fd_ < 0) return;
    sigaction(SIGCHLD, &old_, nullptr);
    g_child_wake_fd = -1;
    ::close(read_fd_);
    ::close(write_fd_);
  }
  ChildWake(const ChildWake&) = delete;
  ChildWake& operator=(const ChildWake&) = delete;

  void Wait(std::chrono::milliseconds timeout) {
    if (read_fd_ < 0) {
      std::this_thread::sleep_for(timeout);
      return;
    }
    struct pollfd p {
      read_fd_, POLLIN, 0
    };
    if (::poll(&p, 1, static_cast<int>(timeout.count())) > 0) {
      char buf[64];
      while (::read(read_fd_, buf, sizeof(buf)) > 0) {
      }
    }
  }

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  struct sigaction old_ {};
};

}  // namespace

SignalForwarder::SignalForwarder() {
  g_pending_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = RecordSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

SignalForwarder::~SignalForwarder() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int SignalForwarder::Forward(Process* target) {
  const int sig = g_pending_signal.exchange(0);
  if (sig == 0) return 0;
  ++forwarded_;
  const int sent = forwarded_ > 2 ? SIGKILL : sig;
  target->Signal(sent);
  return sent;
}

Status WorkerGroup::Start(const std::string& name, const ProcessOptions& options) {
  TS_ASSIGN_OR_RETURN(Process p, Process::Start(options));
  workers_.insert_or_assign(name, std::move(p));
  return Status::OK();
}

void WorkerGroup::ReapEnded(const std::function<void(const std::string&, int)>& on_end) {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->second.Poll()) {
      if (on_end) on_end(it->first, it->second.wait_status());
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void WorkerGroup::StopAll(std::chrono::milliseconds grace,
                          const std::function<void(const std::string&)>& on_killed) {
  for (auto& [name, p] : workers_) p.Signal(SIGTERM);
  const auto deadline = Clock::now() + grace;
  while (!workers_.empty() && Clock::now() < deadline) {
    ReapEnded(nullptr);
    if (!workers_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& [name, p] : workers_) {
    p.Signal(SIGKILL);
    p.Wait();
    if (on_killed) on_killed(name);
  }
  workers_.clear();
}

Result<SupervisedRun> Supervise(const SuperviseOptions& options, const SuperviseEvents& events) {
  Env* env = Env::Default();
  SupervisedRun run;
  SignalForwarder forwarder;
  // Writing to the terminal from the background must not stop the supervisor.
  struct sigaction ignore {
  }, old_ttou{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTTOU, &ignore, &old_ttou);
  struct RestoreTtou {
    struct sigaction* old;
    ~RestoreTtou() { sigaction(SIGTTOU, old, nullptr); }
  } restore_ttou{&old_ttou};

  ProcessOptions training_options = options.training;
  training_options.own_group = true;
  ChildWake wake;  // before the first child: its end is never missed
  const auto start = Clock::now();
  TS_ASSIGN_OR_RETURN(Process training, Process::Start(training_options));
  if (events.on_training_started) events.on_training_started(training.pid());

  WorkerGroup workers;
  for (const auto& [name, worker_options] : options.workers) {
    if (Status s = workers.Start(name, worker_options); !s.ok() && events.on_worker_not_started) {
      events.on_worker_not_started(name, s);
    }
  }
  auto worker_ended = [&](const std::string& name, int ws) {
    if (events.on_worker_ended) events.on_worker_ended(name, ws);
  };
  const StopSignal stop_signal(options.trial);
  Clock::time_point stop_time{}, training_end{};
  for (;;) {
    forwarder.Forward(&training);
    if (!training.ended() && training.Poll()) {
      training_end = Clock::now();
      if (!options.trial.empty() &&
          !env->FileExists(JoinPath(options.trial, trial_format::kEndOfJobFile))) {
        // Best effort (the hook writes it as a rule): without it the rule workers are stopped
        // at workers_timeout below instead of ending by themselves.
        (void)WriteEndOfJob(env, options.trial);
      }
      if (training_options.foreground) tcsetpgrp(STDIN_FILENO, getpgrp());
      if (events.on_training_ended) events.on_training_ended(training.wait_status());
    }
    workers.ReapEnded(worker_ended);
    if (events.on_poll) {
      events.on_poll(std::chrono::duration<double>(Clock::now() - start).count());
    }
    if (!training.ended() && !run.stop_requested && !options.trial.empty() && stop_signal.Check()) {
      run.stop_requested = true;
      stop_time = Clock::now();
      if (events.on_stop_requested) events.on_stop_requested();
    }
    // A hook that never checks the stop signal: stop the training from outside after a grace.
    if (run.stop_requested && !training.ended() && !run.training_terminated &&
        Clock::now() - stop_time > options.stop_grace) {
      if (events.on_stop_grace_expired) events.on_stop_grace_expired();
      training.Signal(SIGTERM);
      run.training_terminated = true;
    }
    if (training.ended() && workers.empty()) break;
    if (training.ended() && Clock::now() - training_end > options.workers_timeout) {
      workers.StopAll(options.worker_kill_grace, events.on_worker_killed);
      break;
    }
    wake.Wait(options.poll_interval);
  }
  run.training_wait_status = training.wait_status();
  run.training_exit_code = ExitCodeOf(run.training_wait_status);
  run.signals_forwarded = forwarder.forwarded();
  return run;
}

}  // namespace trainscope
