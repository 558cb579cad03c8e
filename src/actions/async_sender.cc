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
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) {
      why = "closed";
    } else if (queue_.size() >= capacity_) {
      why = "queue full (" + std::to_string(capacity_) + " pending)";
    } else {
      queue_.push_back(std::move(job));
      work_cv_.notify_one();
      return Status::OK();
    }
  }
  Report(job, ActionResult::kDropped, 0, why);
  return Status::Unavailable(kind_ + " " + target_ + ": " + why + "; notification for rule " +
                             finding.rule + " step " + std::to_string(finding.step) + " dropped (" +
                             std::to_string(dropped_.load()) + " dropped so far)");
}

bool AsyncSender::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !in_flight_; });
}

void AsyncSender::Close(std::chrono::milliseconds drain) {
  std::lock_guard<std::mutex> close_lock(close_mu_);
  if (!worker_.joinable()) return;
  {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    work_cv_.notify_all();
    idle_cv_.wait_for(lock, drain, [&] { return queue_.empty() && !in_flight_; });
    cancel_.store(true);
    work_cv_.notify_all();
  }
  worker_.join();
  std::deque<Job> rest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rest.swap(queue_);
  }
  for (const Job& job : rest) Report(job, ActionResult::kDropped, 0, "not sent before close");
}

bool AsyncSender::Backoff(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !work_cv_.wait_for(lock, d, [&] { return cancel_.load(); });
}

void AsyncSender::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return !queue_.empty() || closing_ || cancel_.load(); });
      if (cancel_.load() || queue_.empty()) {
        // Closing with nothing left, or cancelled: Close reports what remains.
        idle_cv_.notify_all();
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
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace trainscope::actions_internal
