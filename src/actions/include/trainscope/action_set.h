// ActionSet: the actions configured for a run, parsed from a spec string or from smdebug's
// action_str JSON, and the one place a RuleFinding is dispatched to all of them (and recorded in
// the event log and the metrics). docs/actions.md describes the spec.
//
// Spec strings: items separated by ';', each KIND[:KEY=VALUE[,KEY=VALUE...]]:
//   stop
//   webhook:url=http(s)://HOST[:PORT]/PATH[,timeout_ms=N][,connect_timeout_ms=N][,retries=N]
//           [,backoff_ms=N][,queue=N][,header=Name: value]
//   email:to=ADDR[,to=ADDR...],smtp=smtp(s)://HOST[:PORT][,from=ADDR][,user=NAME]
//         [,password_env=VAR][,starttls=true][,subject_prefix=TEXT][,timeout_ms=N][,retries=N]
//         [,backoff_ms=N][,queue=N]
// and for every kind: on=findings|all (status changes too), min_interval_s=N (per rule: repeat
// findings within N seconds are suppressed). A value cannot contain ',' or ';': use JSON then.
// JSON: an object or a list of objects with "name" (stoptraining/stop, email, webhook; any
// case) and the same keys; smdebug's "endpoint" is the email address (or the webhook URL), and
// its "training_job_prefix" is accepted and ignored. "sms" is refused with an explanation.
//
// Thread safety: Dispatch, Flush and Describe may be called from any thread; Add and Close
// must not race with other calls.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/action.h"
#include "trainscope/env.h"
#include "trainscope/event_log.h"
#include "trainscope/finding.h"
#include "trainscope/prometheus.h"
#include "trainscope/status.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

// One parsed item of a spec.
struct ActionSpec {
  std::string kind;                                          // "stop", "webhook", "email"
  std::vector<std::pair<std::string, std::string>> options;  // in order; keys may repeat
  std::string text;  // the item as written, for error messages
};

// Parses a spec string or JSON into items, checking kinds and option names (not values).
// InvalidArgument naming the item and listing the valid forms; NotSupported for "sms".
Result<std::vector<ActionSpec>> ParseActionSpecs(std::string_view spec);
// The valid forms, for error messages and --help.
std::string_view ActionSpecHelp();

// What the set needs from its surroundings. Nothing here is owned; each must outlive the set.
struct ActionContext {
  Env* env = nullptr;                     // null: Env::Default()
  std::string trial_dir;                  // where "stop" writes; named in notifications
  EventLog* event_log = nullptr;          // may be null: findings and outcomes are logged here
  PrometheusExporter* metrics = nullptr;  // may be null: findings and outcomes are counted here
};

// When an action fires.
struct TriggerPolicy {
  bool status_changes = false;  // also on status changes (default: findings only)
  double min_interval_s = 0;    // per rule; 0: every finding
};

class ActionSet {
 public:
  // Parses `spec` (may be empty: no actions, findings are still logged and counted) and builds
  // the actions. Errors name the item at fault.
  static Result<std::unique_ptr<ActionSet>> Create(std::string_view spec, ActionContext context);
  static Result<std::unique_ptr<ActionSet>> FromSpecs(const std::vector<ActionSpec>& specs,
                                                      ActionContext context);
  ~ActionSet();  // Close(0)

  // Adds an action built by the caller. Its outcomes are not seen by the set unless the caller
  // wired its OutcomeCallback to OutcomeCallbackForContext().
  void Add(std::unique_ptr<Action> action, TriggerPolicy policy = {});
  // The callback that logs and counts an outcome in this set's context.
  OutcomeCallback OutcomeCallbackForContext() const;

  // Records `finding` (event log, metrics), then hands it to every action whose policy wants it.
  // Never waits on a network. Returns the first error met (every action is still tried).
  // A finding whose time_micros is 0 is stamped with the Env's clock.
  Status Dispatch(const RuleFinding& finding);

  // Waits until every action's queued work is done, at most `timeout` in all.
  bool Flush(std::chrono::milliseconds timeout);
  // Flush(timeout), then releases the actions (cancelling what is left). Idempotent.
  void Close(std::chrono::milliseconds timeout);

  size_t size() const { return entries_.size(); }
  // "stop /trial/rule-output/stop_training.json", "webhook http://...", one per action.
  std::vector<std::string> Describe() const;

 private:
  struct Entry {
    std::unique_ptr<Action> action;
    TriggerPolicy policy;
  };
  explicit ActionSet(ActionContext context);
  Status Build(const ActionSpec& spec);

  ActionContext context_;
  std::vector<Entry> entries_;
  Mutex mu_;
  // (index in entries_, rule) -> micros of the last finding handed to that action, for
  // TriggerPolicy::min_interval_s.
  std::map<std::pair<size_t, std::string>, int64_t> last_fired_ TS_GUARDED_BY(mu_);
};

}  // namespace trainscope
