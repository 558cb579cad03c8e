// Action: something done with a RuleFinding (stop training, post a webhook, send an email).
// ActionOutcome: what became of it, reported through an OutcomeCallback so the event log and the
// metrics can record every action taken.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "trainscope/finding.h"
#include "trainscope/status.h"

namespace trainscope {

enum class ActionResult : int {
  kDone = 0,        // delivered (HTTP 2xx, SMTP 250, stop file written)
  kFailed = 1,      // given up after the last attempt, or a permanent error
  kDropped = 2,     // not attempted: the queue was full or the action was closing
  kSuppressed = 3,  // not attempted on purpose (repeat within min_interval_s)
};

// "done", "failed", "dropped", "suppressed".
std::string_view ActionResultName(ActionResult result);

struct ActionOutcome {
  std::string action;  // the action's kind: "stop", "webhook", "email"
  std::string target;  // where it went: a URL, recipients, a file
  std::string rule;    // the finding's rule
  int64_t step = -1;   // the finding's step
  ActionResult result = ActionResult::kDone;
  int attempts = 0;         // tries made (0 when dropped or suppressed)
  std::string detail;       // e.g. "HTTP 200", "connection refused", "queue full (64 pending)"
  int64_t time_micros = 0;  // when the outcome was known
};

// Called once per finding handed to an action. Asynchronous actions call it from their worker
// thread; "dropped" outcomes come on the thread that called Notify. Must be thread-safe and quick.
using OutcomeCallback = std::function<void(const ActionOutcome&)>;

// Thread safety: every method of every Action may be called from any thread.
class Action {
 public:
  virtual ~Action() = default;

  // "stop", "webhook", "email".
  virtual std::string_view kind() const = 0;
  // Where it acts, for logs: a URL (without credentials), recipients, a path.
  virtual std::string target() const = 0;

  // Acts on `finding`. Never waits on a network: asynchronous actions queue the work and return.
  // Unavailable when the work was dropped (queue full, closing); other codes for bad input.
  virtual Status Notify(const RuleFinding& finding) = 0;

  // Waits until all accepted work is finished (delivered or given up), at most `timeout`.
  // True if everything finished.
  virtual bool Flush(std::chrono::milliseconds /*timeout*/) { return true; }
};

}  // namespace trainscope
