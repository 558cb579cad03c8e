// Private: the non-blocking delivery machinery shared by the webhook and email notifiers.
//
// A bounded FIFO queue and one worker thread. Enqueue never waits: when the queue is full the
// job is dropped, counted and reported as "dropped". The worker calls a SendFn for each job and
// retries retryable failures with exponential backoff (initial, doubling, capped; a server's
// Retry-After is honoured up to the cap). Close stops accepting, drains for a while, then
// cancels the attempt in flight (the SendFn sees `cancel`) and joins the worker.
//
// Thread safety: all public methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "trainscope/action.h"
#include "trainscope/thread_annotations.h"

namespace trainscope::actions_internal {

struct RetryPolicy {
  int max_attempts = 4;  // 1 try + 3 retries
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{10000};
};

struct AttemptResult {
  bool ok = false;
  bool retryable = false;
  std::string detail;                        // "HTTP 500", "Couldn't connect to server", ...
  std::chrono::milliseconds retry_after{0};  // asked for by the server; 0 if not
};

// Microseconds since the epoch, from the system clock.
int64_t WallMicros();

class AsyncSender {
 public:
  // Called on the worker thread, one job at a time. Must return soon after `cancel` turns true.
  using SendFn =
      std::function<AttemptResult(const std::string& payload, const std::atomic<bool>& cancel)>;

  AsyncSender(std::string kind, std::string target, size_t capacity, RetryPolicy policy,
              SendFn send, OutcomeCallback on_outcome);
  ~AsyncSender();  // Close(0): cancels whatever is pending
  AsyncSender(const AsyncSender&) = delete;
  AsyncSender& operator=(const AsyncSender&) = delete;

  // Queues `payload` on behalf of `finding`. Unavailable (and a "dropped" outcome) when the
  // queue is full or the sender is closed.
  Status Enqueue(const RuleFinding& finding, std::string payload);
  // Waits until the queue is empty and nothing is in flight, at most `timeout`.
  bool Flush(std::chrono::milliseconds timeout);
  // Stops accepting jobs, waits up to `drain` for the queue to empty, then cancels the rest
  // (reported as "dropped") and joins the worker. Idempotent.
  void Close(std::chrono::milliseconds drain);

  uint64_t delivered() const { return delivered_.load(); }
  uint64_t failed() const { return failed_.load(); }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  struct Job {
    std::string rule;
    int64_t step;
    std::string payload;
  };

  void Run() TS_EXCLUDES(mu_);
  // Nothing queued and nothing being sent.
  bool Idle() const TS_REQUIRES(mu_) { return queue_.empty() && !in_flight_; }
  void Report(const Job& job, ActionResult result, int attempts, std::string detail);
  // Sleeps up to `d` unless cancelled. False when cancelled.
  bool Backoff(std::chrono::milliseconds d) TS_EXCLUDES(mu_);

  const std::string kind_;
  const std::string target_;
  const size_t capacity_;
  const RetryPolicy policy_;
  const SendFn send_;
  const OutcomeCallback on_outcome_;

  Mutex close_mu_ TS_ACQUIRED_BEFORE(mu_);  // serialises Close
  Mutex mu_;
  CondVar work_cv_;  // a job arrived, or closing/cancel
  CondVar idle_cv_;  // the queue drained
  std::deque<Job> queue_ TS_GUARDED_BY(mu_);
  bool in_flight_ TS_GUARDED_BY(mu_) = false;
  bool closing_ TS_GUARDED_BY(mu_) = false;
  std::atomic<bool> cancel_{false};
  std::atomic<uint64_t> delivered_{0}, failed_{0}, dropped_{0};
  std::thread worker_;
};

}  // namespace trainscope::actions_internal
