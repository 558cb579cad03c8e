#include "trainscope/action_set.h"

#include <charconv>
#include <cstdlib>

#include "trainscope/email.h"
#include "trainscope/stop_action.h"
#include "trainscope/webhook.h"

namespace trainscope {
namespace {

Status BadValue(const ActionSpec& spec, const std::string& key, const std::string& value,
                const std::string& want) {
  return Status::InvalidArgument("action \"" + spec.text + "\": option " + key + "=\"" + value +
                                 "\" must be " + want);
}

Result<int64_t> ParseInt(const ActionSpec& spec, const std::string& key, const std::string& value,
                         int64_t min_value) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < min_value) {
    return BadValue(spec, key, value, "an integer >= " + std::to_string(min_value));
  }
  return v;
}

Result<double> ParseSeconds(const ActionSpec& spec, const std::string& key,
                            const std::string& value) {
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !(v >= 0)) {
    return BadValue(spec, key, value, "a number of seconds >= 0");
  }
  return v;
}

Result<bool> ParseBool(const ActionSpec& spec, const std::string& key, const std::string& value) {
  if (value == "true" || value == "1" || value == "yes") return true;
  if (value == "false" || value == "0" || value == "no") return false;
  return BadValue(spec, key, value, "true or false");
}

// Options every kind takes.
Result<TriggerPolicy> ParsePolicy(const ActionSpec& spec) {
  TriggerPolicy p;
  for (const auto& [key, value] : spec.options) {
    if (key == "on") {
      if (value == "findings") {
        p.status_changes = false;
      } else if (value == "all") {
        p.status_changes = true;
      } else {
        return BadValue(spec, key, value, "findings or all");
      }
    } else if (key == "min_interval_s") {
      TS_ASSIGN_OR_RETURN(p.min_interval_s, ParseSeconds(spec, key, value));
    }
  }
  return p;
}

}  // namespace

ActionSet::ActionSet(ActionContext context) : context_(std::move(context)) {
  if (context_.env == nullptr) context_.env = Env::Default();
}

ActionSet::~ActionSet() { Close(std::chrono::milliseconds(0)); }

Result<std::unique_ptr<ActionSet>> ActionSet::Create(std::string_view spec, ActionContext context) {
  TS_ASSIGN_OR_RETURN(std::vector<ActionSpec> specs, ParseActionSpecs(spec));
  return FromSpecs(specs, std::move(context));
}

Result<std::unique_ptr<ActionSet>> ActionSet::FromSpecs(const std::vector<ActionSpec>& specs,
                                                        ActionContext context) {
  std::unique_ptr<ActionSet> set(new ActionSet(std::move(context)));
  for (const ActionSpec& spec : specs) TS_RETURN_IF_ERROR(set->Build(spec));
  return set;
}

OutcomeCallback ActionSet::OutcomeCallbackForContext() const {
  EventLog* log = context_.event_log;
  PrometheusExporter* metrics = context_.metrics;
  return [log, metrics](const ActionOutcome& o) {
    // Failing to log an outcome must not disturb the action; the log reports its own errors
    // on the next finding.
    if (log != nullptr) (void)log->LogAction(o);
    if (metrics != nullptr) {
      metrics->RecordAction(o);
      if (o.action == "stop" && o.result == ActionResult::kDone) metrics->SetStopRequested(true);
    }
  };
}

Status ActionSet::Build(const ActionSpec& spec) {
  TS_ASSIGN_OR_RETURN(TriggerPolicy policy, ParsePolicy(spec));
  OutcomeCallback on_outcome = OutcomeCallbackForContext();
  if (spec.kind == "stop") {
    if (context_.trial_dir.empty()) {
      return Status::InvalidArgument("action \"" + spec.text +
                                     "\": stop needs the trial folder, and none was given");
    }
    Add(NewStopTrainingAction(context_.env, context_.trial_dir, std::move(on_outcome)), policy);
    return Status::OK();
  }
  if (spec.kind == "webhook") {
    WebhookOptions o;
    o.trial = context_.trial_dir;
    for (const auto& [key, value] : spec.options) {
      if (key == "url") {
        o.url = value;
      } else if (key == "timeout_ms") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 1));
        o.request_timeout = std::chrono::milliseconds(v);
      } else if (key == "connect_timeout_ms") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 1));
        o.connect_timeout = std::chrono::milliseconds(v);
      } else if (key == "retries") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 0));
        o.max_attempts = static_cast<int>(v + 1);
      } else if (key == "backoff_ms") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 0));
        o.initial_backoff = std::chrono::milliseconds(v);
      } else if (key == "queue") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 1));
        o.queue_capacity = static_cast<size_t>(v);
      } else if (key == "header") {
        o.headers.push_back(value);
      }
    }
    if (o.url.empty()) {
      return Status::InvalidArgument("action \"" + spec.text +
                                     "\": webhook needs url=http(s)://HOST[:PORT]/PATH");
    }
    auto n = WebhookNotifier::Create(std::move(o), std::move(on_outcome));
    if (!n.ok()) return n.status().WithContext("action \"" + spec.text + "\"");
    Add(std::move(n).value(), policy);
    return Status::OK();
  }
  if (spec.kind == "email") {
    EmailOptions o;
    o.trial = context_.trial_dir;
    std::string password_env;
    for (const auto& [key, value] : spec.options) {
      if (key == "to") {
        o.to.push_back(value);
      } else if (key == "smtp") {
        o.smtp_url = value;
      } else if (key == "from") {
        o.from = value;
      } else if (key == "user") {
        o.username = value;
      } else if (key == "password_env") {
        password_env = value;
      } else if (key == "starttls") {
        TS_ASSIGN_OR_RETURN(o.require_starttls, ParseBool(spec, key, value));
      } else if (key == "subject_prefix") {
        o.subject_prefix = value;
      } else if (key == "timeout_ms") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 1));
        o.request_timeout = std::chrono::milliseconds(v);
      } else if (key == "retries") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 0));
        o.max_attempts = static_cast<int>(v + 1);
      } else if (key == "backoff_ms") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 0));
        o.initial_backoff = std::chrono::milliseconds(v);
      } else if (key == "queue") {
        TS_ASSIGN_OR_RETURN(int64_t v, ParseInt(spec, key, value, 1));
        o.queue_capacity = static_cast<size_t>(v);
      }
    }
    if (o.smtp_url.empty()) {
      const char* env_url = std::getenv("TRAINSCOPE_SMTP_URL");
      if (env_url != nullptr) o.smtp_url = env_url;
    }
    if (o.smtp_url.empty()) {
      return Status::InvalidArgument(
          "action \"" + spec.text +
          "\": email needs an SMTP server: add smtp=smtp://HOST:PORT (\"smtp\" in JSON) or set "
          "TRAINSCOPE_SMTP_URL");
    }
    if (!o.username.empty()) {
      if (password_env.empty()) password_env = "TRAINSCOPE_SMTP_PASSWORD";
      const char* pw = std::getenv(password_env.c_str());
      if (pw == nullptr) {
        return Status::InvalidArgument("action \"" + spec.text + "\": user=" + o.username +
                                       " needs a password in the environment variable " +
                                       password_env);
      }
      o.password = pw;
    }
    auto n = EmailNotifier::Create(std::move(o), std::move(on_outcome));
    if (!n.ok()) return n.status().WithContext("action \"" + spec.text + "\"");
    Add(std::move(n).value(), policy);
    return Status::OK();
  }
  return Status::InvalidArgument("action \"" + spec.text + "\": unknown kind " + spec.kind);
}

void ActionSet::Add(std::unique_ptr<Action> action, TriggerPolicy policy) {
  entries_.push_back(Entry{std::move(action), policy});
}

Status ActionSet::Dispatch(const RuleFinding& input) {
  RuleFinding finding = input;
  if (finding.time_micros == 0) {
    finding.time_micros = static_cast<int64_t>(context_.env->NowMicros());
  }
  Status first;
  if (context_.event_log != nullptr) {
    Status s = context_.event_log->LogFinding(finding);
    if (!s.ok() && first.ok()) first = s;
  }
  if (context_.metrics != nullptr) context_.metrics->RecordFinding(finding);
  const bool is_status = finding.kind == FindingKind::kStatusChange;
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (is_status && !e.policy.status_changes) continue;
    if (e.policy.min_interval_s > 0 && !is_status) {
      const int64_t interval = static_cast<int64_t>(e.policy.min_interval_s * 1e6);
      bool suppress = false;
      {
        MutexLock lock(&mu_);
        auto [it, first_time] = last_fired_.try_emplace({i, finding.rule}, finding.time_micros);
        if (!first_time && finding.time_micros - it->second < interval) {
          suppress = true;
        } else {
          it->second = finding.time_micros;
        }
      }
      if (suppress) {
        ActionOutcome o;
        o.action = std::string(e.action->kind());
        o.target = e.action->target();
        o.rule = finding.rule;
        o.step = finding.step;
        o.result = ActionResult::kSuppressed;
        o.detail = "repeat within min_interval_s=" + std::to_string(e.policy.min_interval_s);
        o.time_micros = static_cast<int64_t>(context_.env->NowMicros());
        OutcomeCallbackForContext()(o);
        continue;
      }
    }
    Status s = e.action->Notify(finding);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

bool ActionSet::Flush(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool all = true;
  for (Entry& e : entries_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    all = e.action->Flush(left) && all;
  }
  return all;
}

void ActionSet::Close(std::chrono::milliseconds timeout) {
  if (entries_.empty()) return;
  Flush(timeout);
  entries_.clear();
  MutexLock lock(&mu_);
  last_fired_.clear();
}

std::vector<std::string> ActionSet::Describe() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_)
    out.push_back(std::string(e.action->kind()) + " " + e.action->target());
  return out;
}

}  // namespace trainscope
