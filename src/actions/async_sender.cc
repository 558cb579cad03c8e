#include "actions/async_sender.h"

#include <algorithm>

namespace trainscope::actions_internal {

int64_t WallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

AsyncSender::AsyncSender(std::string kind, std::string target, size_t capacity, RetryPolicy policy,
                         SendFn send, OutcomeCallback on_outcome)
    : kind_(std::move(kind)),
      target_(std::move(target)),
      capacity_(std::max<size_t>(capacity, 1)),
      policy_(policy),
      send_(std::move(send)),
      on_outcome_(std::move(on_outcome)) {
  worker_ = std::thread([this] { Run(); });
}

AsyncSender::~AsyncSender() { Close(std::chrono::milliseconds(0)); }

void AsyncSender::Report(const Job& job, ActionResult result, int attempts, std::string detail) {
  switch (result) {
    case ActionResult::kDone:
      delivered_.fetch_add(1);
      break;
    case ActionResult::kFailed:
      failed_.fetch_add(1);
      break;
    case ActionResult::kDropped:
      dropped_.fetch_add(1);
      break;
    case ActionResult::kSuppressed:
      break;
  }
  if (!on_outcome_) return;
  ActionOutcome o;
  o.action = kind_;
  o.target = target_;
  o.rule = job.rule;
  o.step = job.step;
  o.result = result;
  o.attempts = attempts;
  o.detail = std::move(detail);
  o.time_micros = WallMicros();
  on_outcome_(o);
}

Status AsyncSender::Enqueue(const RuleFinding& finding, std::string payload) {
  Job job{finding.rule, finding.step, std::move(payload)};
  std::string why;
  {
    MutexLock lock(&mu_);
    if (closing_) {
      why = "closed";
    } else if (queue_.size() >= capacity_) {
      why = "queue full (" + std::to_string(capacity_) + " pending)";
    } else {
      queue_.push_back(std::move(job));
      work_cv_.Signal();
      return Status::OK();
    }
  }
  Report(job, ActionResult::kDropped, 0, why);
  return Status::Unavailable(kind_ + " " + target_ + ": " + why + "; notification for rule " +
                             finding.rule + " step " + std::to_string(finding.step) + " dropped (" +
                             std::to_string(dropped_.load()) + " dropped so far)");
}

bool AsyncSender::Flush(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&mu_);
  while (!Idle()) {
    if (!idle_cv_.WaitUntil(&mu_, deadline)) return Idle();
  }
  return true;
}

void AsyncSender::Close(std::chrono::milliseconds drain) {
  MutexLock close_lock(&close_mu_);
  if (!worker_.joinable()) return;
  {
    const auto deadline = std::chrono::steady_clock::now() + drain;
    MutexLock lock(&mu_);
    closing_ = true;
    work_cv_.SignalAll();
    while (!Idle() && idle_cv_.WaitUntil(&mu_, deadline)) {
    }
    cancel_.store(true);
    work_cv_.SignalAll();
  }
  worker_.join();
  std::deque<Job> rest;
  {
    MutexLock lock(&mu_);
    rest.swap(queue_);
  }
  for (const Job& job : rest) Report(job, ActionResult::kDropped, 0, "not sent before close");
}

bool AsyncSender::Backoff(std::chrono::milliseconds d) {
  const auto deadline = std::chrono::steady_clock::now() + d;
  MutexLock lock(&mu_);
  while (!cancel_.load()) {
    if (!work_cv_.WaitUntil(&mu_, deadline)) return !cancel_.load();
  }
  return false;
}

void AsyncSender::Run() {
  for (;;) {
    Job job;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !closing_ && !cancel_.load()) work_cv_.Wait(&mu_);
      if (cancel_.load() || queue_.empty()) {
        // Closing with nothing left, or cancelled: Close reports what remains.
        idle_cv_.SignalAll();
        return;
      }
      job = std::move(queue_.front());
      queue_.pop_front();
      in_flight_ = true;
    }
    std::chrono::milliseconds backoff = policy_.initial_backoff;
    int attempt = 0;
    for (;;) {
      ++attempt;
      AttemptResult r = send_(job.payload, cancel_);
      if (r.ok) {
        Report(job, ActionResult::kDone, attempt, r.detail);
        break;
      }
      if (cancel_.load()) {
        Report(job, ActionResult::kFailed, attempt, r.detail + " (cancelled at close)");
        break;
      }
      if (!r.retryable || attempt >= policy_.max_attempts) {
        Report(job, ActionResult::kFailed, attempt,
               r.detail + (r.retryable ? " (gave up after " + std::to_string(attempt) + " attempts)"
                                       : " (not retried)"));
        break;
      }
      std::chrono::milliseconds wait =
          std::min(std::max(backoff, r.retry_after), policy_.max_backoff);
      if (!Backoff(wait)) {
        Report(job, ActionResult::kFailed, attempt, r.detail + " (cancelled at close)");
        break;
      }
      backoff = std::min(backoff * 2, policy_.max_backoff);
    }
    MutexLock lock(&mu_);
    in_flight_ = false;
    if (queue_.empty()) idle_cv_.SignalAll();
  }
}

}  // namespace trainscope::actions_internal
