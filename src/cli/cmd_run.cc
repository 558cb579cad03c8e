// `trainscope run [options] -- COMMAND...`: runs a training command under the debugger, as a
// SageMaker training job runs with a DebuggerHookConfig and rules:
//   1. writes the hook configuration (the collections the chosen rules need) and points the
//      training at it (TRAINSCOPE_CONFIG, SMDEBUG_CONFIG_FILE_PATH);
//   2. starts the command, one `trainscope rule-worker` process per rule, and the system sampler;
//   3. shows a live status line per rule while the command runs, and forwards signals;
//   4. when the command ends, finishes the trial, lets the rules evaluate the last steps and
//      prints a summary (or JSON). The exit code says what happened (commands.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/python_rule.h"
#include "cli/rule_spec.h"
#include "cli/table.h"
#include "trainscope/action_set.h"
#include "trainscope/env.h"
#include "trainscope/event_log.h"
#include "trainscope/finding.h"
#include "trainscope/hook_config.h"
#include "trainscope/metrics_feed.h"
#include "trainscope/out_dir_lock.h"
#include "trainscope/profiler_format.h"
#include "trainscope/prometheus.h"
#include "trainscope/rule_output_format.h"
#include "trainscope/rule_registry.h"
#include "trainscope/rule_runner.h"
#include "trainscope/stop_signal.h"
#include "trainscope/supervisor.h"
#include "trainscope/system_sampler.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The rules' collections are saved at least this much training time apart once the steps are
// measured (the hook's "min_save_period_ms"; HookConfigJson).
constexpr int64_t kRulesMinSavePeriodMs = 50;
// The framework timeline's files are closed this often (ProfilerConfigJson).
constexpr int kRunTimelineCloseSeconds = 2;
// Forward/backward/optimizer spans are recorded on steps at least this far apart (a sample of
// sub-50-ms steps; every longer step): ProfilerConfigJson's PhaseMinIntervalInMilliseconds. A
// sampled step of a short-step training costs about 0.13 ms (its callbacks attached and removed,
// a tensor hook in backward): 1.3 % of the training at one per 10 ms, 0.3 % at one per 50 ms,
// the rules' saving period (docs/formats/framework_profiling.md).
constexpr int kRunPhaseMinIntervalMs = 50;

struct RunOptions {
  std::string out;
  std::vector<std::string> rules;
  std::string preset;  // default | all | none
  std::string rules_file;
  std::vector<std::string> rule_files;  // custom Python rules: FILE.py:CLASS[:K=V,...][@ACTIONS]
  std::string python;                   // their interpreter (ResolvePython)
  std::vector<std::string> actions;
  int64_t save_interval = 0;  // 0: the rules' own intervals, 500 for other collections
  std::string hook_config;    // the user's hook configuration, merged over the rules' one
  int64_t system_interval_ms = 500;
  bool no_system = false;
  int metrics_port = -1;
  double rules_timeout_s = 60;
  double stop_grace_s = 30;
  bool isolate_rules = false;  // one worker process per rule (WorkerGroups)
  int rules_nice = 10;         // niceness added to the rule workers (0: the training's priority)
  bool json = false;
  std::string json_out;  // also write the JSON summary to this file
  std::vector<std::string> command;
  // Which options were given on the command line (a default is not checked like a value).
  bool save_interval_given = false;
  bool metrics_port_given = false;
};

std::string FormatSeconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

// Every option checked before anything starts: InvalidArgument naming the option, the value
// and what is allowed. Actions are built once (and closed) so that a missing parameter (a
// webhook without url) is found here and not when a rule first fires.
Status ValidateRunOptions(const RunOptions& o) {
  if (o.save_interval_given && o.save_interval < 1) {
    return Status::InvalidArgument(
        "--save-interval " + std::to_string(o.save_interval) +
        ": must be at least 1 (save the rules' collections every N steps; leave it out for "
        "each rule's own interval)");
  }
  if (o.metrics_port_given && (o.metrics_port < 0 || o.metrics_port > 65535)) {
    return Status::InvalidArgument("--metrics-port " + std::to_string(o.metrics_port) +
                                   ": must be 0 to 65535 (0: any free port; leave it out for "
                                   "no metrics endpoint)");
  }
  if (o.rules_nice < 0 || o.rules_nice > 19) {
    return Status::InvalidArgument("--rules-nice " + std::to_string(o.rules_nice) +
                                   ": must be 0 to 19 (niceness added to the rule workers; 0: the "
                                   "training's priority)");
  }
  if (!(o.rules_timeout_s > 0) || !std::isfinite(o.rules_timeout_s)) {
    return Status::InvalidArgument("--rules-timeout " + FormatSeconds(o.rules_timeout_s) +
                                   ": must be more than 0 seconds (how long the rules may take "
                                   "after the training ends)");
  }
  if (!(o.stop_grace_s >= 0) || !std::isfinite(o.stop_grace_s)) {
    return Status::InvalidArgument("--stop-grace " + FormatSeconds(o.stop_grace_s) +
                                   ": must be 0 or more seconds (how long a stopped training "
                                   "gets before SIGTERM)");
  }
  if (o.system_interval_ms < profiler_format::kMinSystemIntervalMillis ||
      o.system_interval_ms > profiler_format::kMaxSystemIntervalMillis) {
    return Status::InvalidArgument(
        "--system-interval-ms " + std::to_string(o.system_interval_ms) + ": must be " +
        std::to_string(profiler_format::kMinSystemIntervalMillis) + " to " +
        std::to_string(profiler_format::kMaxSystemIntervalMillis) + " ms");
  }
  for (const auto& a : o.actions) {
    ActionContext context;
    context.trial_dir = o.out;
    auto set = ActionSet::Create(a, context);
    if (!set.ok()) return Status::InvalidArgument("--action " + a + ": " + set.status().message());
  }
  if (!o.json_out.empty()) {
    const auto slash = o.json_out.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : o.json_out.substr(0, slash + 1);
    if (!Env::Default()->IsDirectory(dir)) {
      return Status::InvalidArgument("--json-out " + o.json_out + ": its folder " + dir +
                                     " does not exist");
    }
  }
  return Status::OK();
}

std::string DefaultOutDir() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "runs/%Y%m%d-%H%M%S", std::localtime(&t));
  return buf;
}

// The rule specs to run, validated by creating each rule once.
Result<std::vector<RuleSpec>> ResolveRules(const RunOptions& o,
                                           std::vector<CollectionRequest>* collections) {
  std::vector<RuleSpec> specs;
  std::vector<std::string> names;
  if (o.preset == "default" ||
      (o.preset.empty() && o.rules.empty() && o.rules_file.empty() && o.rule_files.empty())) {
    names = DefaultRuleNames();
  } else if (o.preset == "all") {
    for (const auto& n : RuleNames()) {
      // Every rule but SimilarAcrossRuns, which needs another trial. Confusion and ClassImbalance
      // judge the labels and predictions the script saves; without them their status says so.
      if (n != "SimilarAcrossRuns") names.push_back(n);
    }
  } else if (!o.preset.empty() && o.preset != "none") {
    return Status::InvalidArgument("--rules '" + o.preset + "': use default, all or none");
  }
  specs.reserve(specs.size() + names.size() + o.rules.size());
  for (const auto& n : names) specs.push_back(RuleSpec{n, {}, "", n});
  for (const auto& text : o.rules) {
    TS_ASSIGN_OR_RETURN(RuleSpec s, ParseRuleSpec(text));
    specs.push_back(std::move(s));
  }
  if (!o.rules_file.empty()) {
    TS_ASSIGN_OR_RETURN(auto file_specs, ReadRulesFile(o.rules_file));
    for (auto& s : file_specs) specs.push_back(std::move(s));
  }
  // A rule given explicitly replaces the preset's entry of the same name.
  std::vector<RuleSpec> unique;
  for (auto it = specs.rbegin(); it != specs.rend(); ++it) {
    bool seen = false;
    for (const auto& u : unique) seen |= u.name == it->name;
    if (!seen) unique.insert(unique.begin(), *it);
  }
  // Custom Python rules: each checked by its interpreter (file, class, parameters) before the
  // training starts; a class named like another rule of the run would share its rule-output.
  for (const auto& text : o.rule_files) {
    TS_ASSIGN_OR_RETURN(RuleSpec s, ParsePythonRuleSpec(text));
    for (const auto& u : unique) {
      if (u.name == s.name) {
        return Status::InvalidArgument(
            "--rule-file " + text + ": the run has another rule named " + s.name + " (" +
            (u.python_file.empty() ? "built-in" : u.python_file) + "); rule-output/" + s.name +
            "/ would be shared: rename the class" +
            (u.python_file.empty() ? " or leave the built-in rule out (--rules none)" : ""));
      }
    }
    TS_RETURN_IF_ERROR(CheckPythonRule(o.python, s).status());
    // The workers may not share the supervisor's view of a relative path for ever.
    if (char abs[4096]; realpath(s.python_file.c_str(), abs) != nullptr) s.python_file = abs;
    unique.push_back(std::move(s));
  }
  for (const auto& s : unique) {
    if (s.python_file.empty()) {
      TS_ASSIGN_OR_RETURN(auto rule, CreateRule(s.name, s.params));
      for (auto c : rule->RequiredCollections()) {
        if (o.save_interval > 0) c.save_interval = o.save_interval;
        collections->push_back(std::move(c));
      }
    }
    if (!s.actions.empty()) {
      ActionContext context;
      context.trial_dir = o.out;
      if (auto set = ActionSet::Create(s.actions, context); !set.ok()) {
        return Status::InvalidArgument((s.python_file.empty() ? "--rule " : "--rule-file ") +
                                       FormatRuleSpec(s) + ": " + set.status().message());
      }
    }
  }
  for (const auto& a : o.actions) TS_RETURN_IF_ERROR(ParseActionSpecs(a).status());
  return unique;
}

// The hook configuration: the collections the rules need (and losses every 10 steps), then
// the user's --hook-config merged over it as SageMaker merges a DebuggerHookConfig with its
// rules' needs: its HookParameters keys and its CollectionConfigurations entries (by
// CollectionName) replace the generated ones; the trial stays --out. The result is parsed as
// the hook will parse it, so a bad file stops `run` before the training starts. `quiet`: no
// note on stderr (a first call that only checks).
Result<std::string> HookConfigJson(const std::string& out, int64_t save_interval,
                                   const std::vector<CollectionRequest>& collections,
                                   const std::string& user_file, bool quiet = false) {
  nlohmann::json j;
  j["LocalPath"] = out;
  // Every rank of a distributed training writes its own worker (smdebug's default, "one",
  // keeps rank 0's only; a --hook-config may ask for it).
  j["HookParameters"] = {{"save_interval", std::to_string(save_interval > 0 ? save_interval : 500)},
                         {"include_workers", "all"}};
  auto merged = MergeCollectionRequests(collections);
  bool has_losses = false;
  for (const auto& c : merged) has_losses |= c.name == "losses";
  if (!has_losses) {
    CollectionRequest losses;
    losses.name = "losses";
    losses.save_interval = save_interval > 0 ? save_interval : 10;
    merged.push_back(losses);
    merged = MergeCollectionRequests(merged);
  }
  j["CollectionConfigurations"] = nlohmann::json::parse(CollectionRequestsToHookJson(merged));
  // Short steps (src/capture/planner.h): a saving step costs the training about a millisecond
  // of CPU (files, the hook's work; README, Performance), so on steps of a few milliseconds
  // the rules' schedules are stretched to keep their saving steps kRulesMinSavePeriodMs of
  // training apart, after the first kThinFromStep steps. --save-interval and the entries of a
  // --hook-config (which replace these) are saved as given.
  if (save_interval <= 0) {
    for (auto& c : j["CollectionConfigurations"]) {
      c["CollectionParameters"]["min_save_period_ms"] = std::to_string(kRulesMinSavePeriodMs);
    }
  }
  if (!user_file.empty()) {
    const std::string where = "--hook-config " + user_file;
    auto text = Env::Default()->ReadFile(user_file);
    if (!text.ok()) return Status::NotFound(where + ": cannot read it: " + text.status().message());
    nlohmann::json user;
    try {
      user = nlohmann::json::parse(*text);
    } catch (const nlohmann::json::parse_error& e) {
      // nlohmann says "[json.exception.parse_error.101] parse error at line L, column C: ...".
      std::string what = e.what();
      if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
      return Status::InvalidArgument(where + ": not valid JSON: " + what);
    }
    if (!user.is_object()) {
      return Status::InvalidArgument(
          where +
          ": not a JSON object (smdebug's hook configuration: "
          "{\"HookParameters\": {...}, \"CollectionConfigurations\": "
          "[{\"CollectionName\": ..., \"CollectionParameters\": {...}}]})");
    }
    for (const auto& [key, value] : user.items()) {
      if (key == "LocalPath") {
        if (value != out && !quiet) {
          std::fprintf(stderr, "trainscope run: %s: LocalPath ignored, the trial is %s (--out)\n",
                       where.c_str(), out.c_str());
        }
      } else if (key == "HookParameters" && value.is_object()) {
        for (const auto& [k, v] : value.items()) j["HookParameters"][k] = v;
      } else if (key == "CollectionConfigurations" && value.is_array()) {
        auto& mine = j["CollectionConfigurations"];
        for (const auto& c : value) {
          if (!c.is_object() || !c.contains("CollectionName") || !c["CollectionName"].is_string()) {
            return Status::InvalidArgument(where +
                                           ": every CollectionConfigurations entry needs "
                                           "a \"CollectionName\" string; found " +
                                           c.dump());
          }
          auto same = std::find_if(mine.begin(), mine.end(), [&](const nlohmann::json& m) {
            return m["CollectionName"] == c["CollectionName"];
          });
          if (same != mine.end()) {
            *same = c;
          } else {
            mine.push_back(c);
          }
        }
      } else {
        return Status::InvalidArgument(
            where + ": unexpected key \"" + key + "\" (of type " + value.type_name() +
            "); a hook configuration has LocalPath (a string), HookParameters (an object) and "
            "CollectionConfigurations (an array)");
      }
    }
  }
  std::string text = j.dump(2) + "\n";
  if (auto parsed = ParseHookConfigJson(text, "the hook configuration"); !parsed.ok()) {
    return Status::InvalidArgument((user_file.empty() ? "" : "--hook-config " + user_file + ": ") +
                                   parsed.status().message());
  }
  return text;
}

std::string ProfilerConfigJson(const std::string& out, int64_t interval_ms) {
  nlohmann::json j;
  // Timeline files close every 2 s (smdebug's default is 60 s): the profiler rules read a file
  // once it is closed, so what is left for them to read when the training ends is at most 2 s of
  // events, and their final verdicts follow the last step within the rule-latency goal
  // (bench/run_cost.py's "lag").
  j["ProfilingParameters"] = {{"ProfilerEnabled", true},
                              {"LocalPath", out},
                              {"system_monitor_interval_millis", interval_ms},
                              {"RotateFileCloseIntervalInSeconds", kRunTimelineCloseSeconds},
                              {"PhaseMinIntervalInMilliseconds", kRunPhaseMinIntervalMs}};
  return j.dump(2) + "\n";
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "trainscope";
  buf[n] = '\0';
  return buf;
}

class LiveView {
 public:
  explicit LiveView(bool enabled) : enabled_(enabled) {}
  void Update(const std::vector<RuleStatusView>& rules, double elapsed_s) {
    std::string text;
    for (const auto& r : rules) {
      char line[256];
      std::snprintf(line, sizeof(line), "  %-26s %-14s step %-8s findings %lld",
                    EscapeForTerminal(r.rule).c_str(), EscapeForTerminal(r.status).c_str(),
                    r.last_step >= 0 ? std::to_string(r.last_step).c_str() : "-",
                    static_cast<long long>(r.findings));
      text += line;
      text += "\n";
    }
    char head[128];
    std::snprintf(head, sizeof(head), "trainscope: training running for %s\n",
                  FormatDuration(elapsed_s).c_str());
    text = head + text;
    if (enabled_) {
      if (lines_ > 0) std::fprintf(stderr, "\x1b[%dA\x1b[J", lines_);
      std::fputs(text.c_str(), stderr);
      lines_ = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    } else {
      // Not a terminal: print each rule's status when it changes.
      for (const auto& r : rules) {
        auto& last = last_status_[r.rule];
        if (last != r.status) {
          std::fprintf(stderr, "trainscope: %s: %s%s\n", EscapeForTerminal(r.rule).c_str(),
                       EscapeForTerminal(r.status).c_str(),
                       r.first_finding_step >= 0
                           ? (" at step " + std::to_string(r.first_finding_step)).c_str()
                           : "");
          last = r.status;
        }
      }
    }
  }

 private:
  bool enabled_;
  int lines_ = 0;
  std::map<std::string, std::string> last_status_;
};

// The rules' statuses as the metrics feed takes them: by rule, nullopt where unreadable.
std::map<std::string, std::optional<RuleEvaluationStatus>> FeedStatuses(
    const std::vector<RuleStatusView>& rules) {
  std::map<std::string, std::optional<RuleEvaluationStatus>> out;
  for (const auto& r : rules) out[r.rule] = RuleEvaluationStatusFromName(r.status);
  return out;
}

// The rule workers `trainscope run` starts, by name: one for the built-in debugging rules
// ("debugging-rules"), one for the built-in profiler rules ("profiler-rules"), each reading the
// trial once for all of its rules, and one per custom Python rule (its name). With `isolate`,
// one per rule (the rule's name).
std::map<std::string, std::vector<const RuleSpec*>> WorkerGroups(const std::vector<RuleSpec>& specs,
                                                                 bool isolate) {
  std::map<std::string, std::vector<const RuleSpec*>> groups;
  for (const auto& s : specs) {
    std::string worker = s.name;
    if (!isolate && s.python_file.empty()) {
      auto info = DescribeRule(s.name);
      worker = info.ok() && info->kind == "profiler" ? "profiler-rules" : "debugging-rules";
    }
    groups[worker].push_back(&s);
  }
  return groups;
}

// A rule worker that ended without a final status of its own (killed, crashed, or stuck past
// --rules-timeout) leaves its rule in Error, as SageMaker reports a rule container that failed,
// with what happened in the message; what the rule had found stays in status.json's counts.
// A worker that reported its own end (finished, or an Error it caught) is left as it said.
void MarkRuleFailed(Env* env, const std::string& trial, const RuleSpec& spec,
                    const std::string& what) {
  const std::string& rule = spec.name;
  namespace fmt = rule_output_format;
  const std::string path =
      JoinPath(JoinPath(JoinPath(trial, fmt::kRuleOutputDir), rule), fmt::kStatusFile);
  // What the rule had counted stays; an unreadable file is replaced.
  RuleState state;
  if (auto text = env->ReadFile(path); text.ok()) {
    if (auto old = RuleStateFromJson(*text); old.ok()) state = std::move(old).value();
  }
  if (state.finished || state.status == RuleEvaluationStatus::kError ||
      state.status == RuleEvaluationStatus::kStopped) {
    return;
  }
  state.rule = rule;
  state.status = RuleEvaluationStatus::kError;
  state.message = "the rule's worker process " + what +
                  " before the rule finished (the training was not affected); to evaluate the "
                  "rule on the trial again: trainscope rule-worker " +
                  trial + (spec.python_file.empty() ? " --rule '" : " --rule-file '") +
                  FormatRuleSpec(spec) + "'";
  state.finished = true;
  Status s = WriteRuleState(env, trial, state, static_cast<int64_t>(env->NowMicros()));
  if (!s.ok()) std::fprintf(stderr, "trainscope run: %s\n", s.ToString().c_str());
  std::fprintf(stderr, "trainscope: rule %s: its worker %s; status Error\n", rule.c_str(),
               what.c_str());
}

// The output folder is owned by one `trainscope run` at a time: an exclusive flock(2) on
// <out>/.trainscope/run.lock, held (close-on-exec, so not by the training) until the supervisor
// exits; the file names the owner (docs/formats/trial.md, "Ownership"). Returns the descriptor
// to keep open, or Unavailable naming the owner when another run holds it.
Result<int> LockOutputFolder(const std::string& meta_dir, const std::string& out,
                             const std::vector<std::string>& command) {
  const std::string path = JoinPath(meta_dir, "run.lock");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string owner;
    char buf[4096];
    const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      return Status::IOError("cannot lock " + path + ": " + std::strerror(err));
    }
    // Hooks of a training started without `trainscope run` hold run.lock shared and their
    // worker_<rank>.lock exclusively (out_dir_lock.h); the file then still names an old run.
    if (std::string hooks = capture::DescribeHookWriters(out); !hooks.empty()) {
      return Status::Unavailable(
          out + " is being written by a training started without `trainscope run` (" + hooks +
          "; lock " + path +
          "): one training writes a trial at a time; wait for it to end or "
          "choose another --out");
    }
    auto j =
        nlohmann::json::parse(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), nullptr, false);
    if (j.is_object()) {
      owner = "pid " + std::to_string(JsonInt(j, "pid", -1)) + " on " + JsonString(j, "host", "?") +
              ", started " + JsonString(j, "started", "?");
      if (j.contains("command") && j["command"].is_array()) {
        std::string cmd;
        for (const auto& a : j["command"]) {
          cmd += (cmd.empty() ? "" : " ") + (a.is_string() ? a.get<std::string>() : a.dump());
        }
        owner += ", running: " + cmd;
      }
    } else {
      owner = "its owner has not written its name yet";
    }
    return Status::Unavailable(
        out + " is in use by another `trainscope run` (" + owner + "; lock " + path +
        "): one run writes a trial at a time; wait for it to end or choose another --out (the "
        "workers of one multi-process training all write through the one run that started "
        "them)");
  }
  char host[256] = "?";
  (void)gethostname(host, sizeof(host) - 1);  // on failure the name stays "?"
  const auto now = static_cast<int64_t>(Env::Default()->NowMicros());
  nlohmann::json j{{"pid", static_cast<int64_t>(getpid())},
                   {"host", host},
                   {"started", FormatTimeUtc(now)},
                   {"command", command}};
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0) {
    std::fprintf(stderr, "trainscope run: cannot write the owner to %s: %s (the lock holds)\n",
                 path.c_str(), std::strerror(errno));
  }
  return fd;
}

int RunRun(RunOptions o) {
  if (o.command.empty()) {
    std::fprintf(
        stderr,
        "trainscope run: no command: write `trainscope run [options] -- python train.py`\n");
    return kExitUsage;
  }
  if (Status s = ValidateRunOptions(o); !s.ok()) {
    std::fprintf(stderr, "trainscope run: %s\n", s.message().c_str());
    return kExitUsage;
  }
  std::vector<CollectionRequest> collections;
  o.python = ResolvePython(o.command);
  auto specs = ResolveRules(o, &collections);
  if (!specs.ok()) {
    std::fprintf(stderr, "trainscope run: %s\n", specs.status().message().c_str());
    return kExitUsage;
  }
  Env* env = Env::Default();
  if (o.out.empty()) o.out = DefaultOutDir();
  if (env->FileExists(JoinPath(o.out, trial_format::kEndOfJobFile))) {
    std::fprintf(stderr,
                 "trainscope run: %s already holds a finished trial: choose another --out or "
                 "remove it\n",
                 o.out.c_str());
    return kExitUsage;
  }
  // The hook configuration is checked before anything is made under --out; it is built again
  // below with the folder's final, absolute path.
  if (auto checked = HookConfigJson(o.out, o.save_interval, collections, o.hook_config,
                                    /*quiet=*/true);
      !checked.ok()) {
    std::fprintf(stderr, "trainscope run: %s\n", checked.status().message().c_str());
    return kExitUsage;
  }
  char abs[4096];
  std::string meta = JoinPath(o.out, ".trainscope");
  if (Status s = env->CreateDirs(meta); !s.ok()) {
    std::fprintf(stderr, "trainscope run: cannot create %s: %s\n", meta.c_str(),
                 s.message().c_str());
    return kExitFailure;
  }
  if (realpath(o.out.c_str(), abs) != nullptr) o.out = abs;
  meta = JoinPath(o.out, ".trainscope");
  auto lock_fd = LockOutputFolder(meta, o.out, o.command);
  if (!lock_fd.ok()) {
    std::fprintf(stderr, "trainscope run: %s\n", lock_fd.status().message().c_str());
    return lock_fd.status().code() == StatusCode::kUnavailable ? kExitUsage : kExitFailure;
  }
  // Held until this process exits (the descriptor is never closed before that).
  const std::string hook_config = JoinPath(meta, "hook_config.json");
  const std::string profiler_config = JoinPath(meta, "profiler_config.json");
  // A stop request left by an earlier run would stop this training at its first step.
  if (Status s = StopSignal::Clear(env, o.out); !s.ok()) {
    std::fprintf(stderr, "trainscope run: cannot remove an earlier stop request: %s\n",
                 s.ToString().c_str());
    return kExitFailure;
  }
  auto hook_json = HookConfigJson(o.out, o.save_interval, collections, o.hook_config);
  if (!hook_json.ok()) {
    std::fprintf(stderr, "trainscope run: %s\n", hook_json.status().message().c_str());
    return kExitUsage;
  }
  if (Status s = env->WriteFileAtomic(hook_config, *hook_json, false); !s.ok()) {
    std::fprintf(stderr, "trainscope run: %s\n", s.ToString().c_str());
    return kExitFailure;
  }
  if (Status s = env->WriteFileAtomic(profiler_config,
                                      ProfilerConfigJson(o.out, o.system_interval_ms), false);
      !s.ok()) {
    std::fprintf(stderr, "trainscope run: cannot write the profiler configuration: %s\n",
                 s.ToString().c_str());
  }

  // The training gets the terminal (it may read it: pdb, input(); Ctrl-C goes to it directly),
  // when trainscope has it.
  const bool foreground = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();

  std::vector<std::string> env_add = {"TRAINSCOPE_CONFIG=" + hook_config,
                                      "SMDEBUG_CONFIG_FILE_PATH=" + hook_config,
                                      "TRAINSCOPE_PROFILER_CONFIG=" + profiler_config,
                                      "TRAINSCOPE_OUT_DIR=" + o.out, "TRAINSCOPE_RUN=1"};
  // Automatic mode (python/trainscope/auto): the package's boot folder goes first on
  // PYTHONPATH, so each Python process of the training runs its sitecustomize, and
  // TRAINSCOPE_AUTO=1 turns the mode on unless the caller set TRAINSCOPE_AUTO (0: off). The
  // folder: TRAINSCOPE_AUTO_BOOT, else trainscope/auto/boot beside the installed package's
  // trainscope/bin/ that holds this executable, else the source tree's python/trainscope/
  // auto/boot from a build folder inside the checkout (build/bin/trainscope).
  {
    const char* boot_env = std::getenv("TRAINSCOPE_AUTO_BOOT");
    std::vector<std::string> candidates;
    if (boot_env != nullptr && *boot_env != '\0') {
      candidates.push_back(boot_env);
    } else {
      std::string dir = SelfExe();
      dir.resize(dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/'));
      candidates = {JoinPath(dir, "../auto/boot"),
                    JoinPath(dir, "../../python/trainscope/auto/boot")};
    }
    std::string boot;
    for (const auto& c : candidates) {
      if (env->FileExists(JoinPath(c, "sitecustomize.py"))) {
        boot = c;
        break;
      }
    }
    if (boot.empty() && !o.json) {
      std::fprintf(stderr,
                   "trainscope: automatic mode off: no boot folder (sitecustomize.py) at %s; a "
                   "script without a hook of its own is not captured (set TRAINSCOPE_AUTO_BOOT "
                   "to trainscope/auto/boot of the installed package)\n",
                   candidates.front().c_str());
    }
    if (!boot.empty()) {
      if (realpath(boot.c_str(), abs) != nullptr) boot = abs;
      const char* path = std::getenv("PYTHONPATH");
      env_add.push_back("PYTHONPATH=" + boot +
                        (path != nullptr && *path != '\0' ? ":" + std::string(path) : ""));
      const char* user_auto = std::getenv("TRAINSCOPE_AUTO");
      if (user_auto == nullptr || *user_auto == '\0') env_add.push_back("TRAINSCOPE_AUTO=1");
    }
  }
  if (!o.json) {
    std::fprintf(stderr, "trainscope: trial %s\ntrainscope: %zu rule(s):", o.out.c_str(),
                 specs->size());
    for (const auto& s : *specs) std::fprintf(stderr, " %s", s.name.c_str());
    std::fprintf(stderr, "\n");
  }
  // What the supervisor runs: the training, in a process group of its own (signals reach its
  // tree), and one worker per rule, in groups of their own too (a Ctrl-C meant for the training
  // must not stop the rules before they have read its last steps), each ended with trainscope.
  SuperviseOptions so;
  so.trial = o.out;
  so.training.argv = o.command;
  so.training.env_add = env_add;
  so.training.foreground = foreground;
  so.training.stdout_to_stderr = o.json;
  so.stop_grace = std::chrono::duration<double>(o.stop_grace_s);
  so.workers_timeout = std::chrono::duration<double>(o.rules_timeout_s);
  const std::string self = SelfExe();
  // The workers: by worker name, the rules each evaluates (WorkerGroups).
  std::map<std::string, std::vector<const RuleSpec*>> rules_of;
  for (auto& [name, group] : WorkerGroups(*specs, o.isolate_rules)) {
    std::vector<std::string> argv = {self, "rule-worker", o.out};
    for (const RuleSpec* s : group) {
      if (s->python_file.empty()) {
        argv.insert(argv.end(), {"--rule", FormatRuleSpec(*s)});
      } else {
        argv.insert(argv.end(), {"--rule-file", FormatRuleSpec(*s), "--python", o.python});
      }
    }
    for (const auto& a : o.actions) {
      argv.push_back("--action");
      argv.push_back(a);
    }
    so.workers[name] = ProcessOptions{.argv = std::move(argv),
                                      .own_group = true,
                                      .die_with_parent = true,
                                      .stdout_to_stderr = o.json,
                                      .nice = o.rules_nice};
    rules_of[name] = std::move(group);
  }

  std::unique_ptr<SystemSampler> sampler;
  std::unique_ptr<PrometheusExporter> metrics;
  std::unique_ptr<MetricsFeed> feed;
  LiveView view(!o.json && StdoutIsTerminal() && isatty(STDERR_FILENO));
  auto poll_statuses = [&](double elapsed_s) {
    auto statuses = ReadRuleStatuses(o.out);
    if (feed) feed->Poll(FeedStatuses(statuses));
    if (!o.json) view.Update(statuses, elapsed_s);
  };
  SuperviseEvents events;
  events.on_training_started = [&](pid_t child) {
    if (!o.no_system) {
      SystemSamplerOptions sampler_options;
      sampler_options.interval_millis = o.system_interval_ms;
      sampler_options.root_pid = child;
      auto s = SystemSampler::Create(env, o.out, sampler_options);
      if (!s.ok()) {
        std::fprintf(stderr, "trainscope run: system metrics off: %s\n",
                     s.status().message().c_str());
      } else {
        sampler = std::move(*s);
        if (Status started = sampler->Start(); !started.ok()) {
          std::fprintf(stderr, "trainscope run: system metrics off: %s\n",
                       started.message().c_str());
        }
      }
    }
    if (o.metrics_port >= 0) {
      metrics = std::make_unique<PrometheusExporter>(o.out);
      auto port = metrics->Serve("127.0.0.1", o.metrics_port);
      if (port.ok()) {
        std::fprintf(stderr, "trainscope: metrics at http://127.0.0.1:%d/metrics\n", *port);
        feed = std::make_unique<MetricsFeed>(metrics.get(), o.out);
      } else {
        std::fprintf(stderr, "trainscope run: metrics off: %s\n", port.status().message().c_str());
        metrics.reset();
      }
    }
  };
  events.on_training_ended = [&](int) {
    if (sampler) sampler->Stop();
    // Steps the training handed over but did not publish (it was killed): published now, in
    // step order, before the rules' last look (docs/formats/journal.md, Recovery).
    auto rec = RecoverTrial(o.out);
    if (!rec.ok()) {
      std::fprintf(stderr, "trainscope: recovering the trial's journal failed: %s\n",
                   EscapeForTerminal(rec.status().ToString()).c_str());
    } else if (rec->steps_recovered > 0 || rec->steps_lost > 0) {
      std::fprintf(stderr,
                   "trainscope: the training ended without publishing %lld step(s) it had "
                   "handed over; recovered them from the journal%s\n",
                   static_cast<long long>(rec->steps_recovered) + rec->steps_lost,
                   rec->steps_lost > 0 ? " (some were damaged: the trial is incomplete)" : "");
    }
  };
  // A worker's end: anything but "no issues" (0) or "issues found" (3) is a failure unless the
  // worker wrote its own final status.
  events.on_worker_ended = [&](const std::string& worker, int ws) {
    if (WIFEXITED(ws) && (WEXITSTATUS(ws) == kExitOk || WEXITSTATUS(ws) == kExitIssuesFound)) {
      return;
    }
    for (const RuleSpec* s : rules_of[worker]) {
      MarkRuleFailed(env, o.out, *s, DescribeWaitStatus(ws));
    }
  };
  events.on_worker_not_started = [&](const std::string& worker, const Status& st) {
    for (const RuleSpec* s : rules_of[worker]) {
      MarkRuleFailed(env, o.out, *s, "could not be started (" + st.message() + ")");
    }
  };
  // --rules-timeout ran out: SIGTERM (a worker then ends its rule as Stopped at its next poll),
  // SIGKILL 5 s later for a worker stuck inside a rule, whose rule is reported.
  events.on_worker_killed = [&](const std::string& worker) {
    char what[128];
    std::snprintf(what, sizeof(what),
                  "did not end within --rules-timeout (%.0f s) and 5 s after SIGTERM; it was "
                  "killed",
                  o.rules_timeout_s);
    for (const RuleSpec* s : rules_of[worker]) MarkRuleFailed(env, o.out, *s, what);
  };
  events.on_stop_requested = [&] {
    if (metrics) metrics->SetStopRequested(true);
  };
  events.on_stop_grace_expired = [&] {
    std::fprintf(stderr,
                 "trainscope: the training did not stop by itself within %.0f s; sending "
                 "SIGTERM\n",
                 o.stop_grace_s);
  };
  events.on_poll = poll_statuses;

  const auto start = Clock::now();
  auto run = Supervise(so, events);
  if (!run.ok()) {
    std::fprintf(stderr, "trainscope run: %s\n", run.status().message().c_str());
    return kExitFailure;
  }
  if (feed) feed->Poll(FeedStatuses(ReadRuleStatuses(o.out)));
  if (metrics) metrics->StopServing();

  auto statuses = ReadRuleStatuses(o.out);
  auto stop = ReadStopRequest(o.out);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const int training_code = run->training_exit_code;
  int code = kExitOk;
  if (stop) {
    code = kExitStopped;
  } else if (training_code != 0) {
    code = kExitTrainingFailed;
  } else {
    code = RulesExitCode(statuses);
  }
  const auto incomplete = IncompleteMarkers(o.out);
  code = WithIncomplete(code, !incomplete.empty());
  nlohmann::json summary{{"trial", o.out},
                         {"command", o.command},
                         {"training_exit_code", training_code},
                         {"seconds", elapsed},
                         {"exit_code", code},
                         {"rules", StatusesJson(statuses)},
                         {"diagnosis", DiagnosesJson(statuses)},
                         {"stop_request", stop ? *stop : nlohmann::json(nullptr)},
                         {"incomplete", IncompleteJson(incomplete)}};
  const auto last_saved = LastSavedStep(o.out);
  summary["last_saved_step"] =
      last_saved ? nlohmann::json(last_saved->step) : nlohmann::json(nullptr);
  if (!o.json_out.empty()) {
    if (Status s = env->WriteFileAtomic(o.json_out, DumpJson(summary) + "\n", false); !s.ok()) {
      std::fprintf(stderr, "trainscope run: --json-out: %s\n", s.ToString().c_str());
    }
  }
  for (const auto& r : statuses) {
    if (!r.error.empty()) {
      std::fprintf(stderr, "trainscope run: rule %s: its status file %s\n",
                   EscapeForTerminal(r.rule).c_str(), EscapeForTerminal(r.error).c_str());
    }
  }
  if (o.json) {
    // Only the JSON goes to stdout: the training's and the rules' stdout went to stderr.
    std::cout << DumpJson(summary) << "\n";
    return code;
  }
  std::cout << "\ntrainscope: training "
            << (stop                 ? std::string("stopped")
                : training_code == 0 ? std::string("finished")
                                     : "exited with code " + std::to_string(training_code))
            << " after " << FormatDuration(elapsed) << "; trial " << EscapeForTerminal(o.out)
            << "\n\n"
            << RenderStatusTable(statuses);
  std::cout << RenderDiagnoses(statuses);
  if (stop) std::cout << "\n" << DescribeStop(*stop, o.out);
  if (!incomplete.empty()) std::cout << "\n" << DescribeIncomplete(incomplete);
  std::cout << "\nMore: trainscope status " << EscapeForTerminal(o.out) << "   trainscope ls "
            << EscapeForTerminal(o.out) << "\n";
  return code;
}

}  // namespace

void RegisterRun(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Run a training command under the debugger: trainscope run [options] -- COMMAND...");
  cmd->add_option("--out,-o", o->out, "Trial folder (default: runs/<date-time>)");
  cmd->add_option("--rule,-r", o->rules,
                  "NAME[:KEY=VALUE,...][@ACTIONS]; repeatable (see `trainscope rules`)");
  cmd->add_option("--rule-file", o->rule_files,
                  "FILE.py:CLASS[:KEY=VALUE,...][@ACTIONS]: a custom rule, a subclass of "
                  "smdebug's Rule (trainscope.rules.Rule), run in its own Python process; "
                  "repeatable; checked before the training starts. Python: $TRAINSCOPE_PYTHON, "
                  "else the command's python, else python3");
  cmd->add_option("--rules", o->preset,
                  "A rule set: default, all or none (default when no --rule)");
  cmd->add_option("--rules-config", o->rules_file,
                  "JSON file: [{\"name\", \"parameters\", \"actions\"}]");
  cmd->add_option("--action,-a", o->actions,
                  "Action for every rule's findings: stop, webhook:url=..., email:to=...,smtp=...");
  auto* save_interval = cmd->add_option("--save-interval", o->save_interval,
                                        "Save the rules' collections every N steps (N >= 1)");
  cmd->add_option("--hook-config", o->hook_config,
                  "smdebug hook configuration JSON merged over the one the rules need (its "
                  "HookParameters and CollectionConfigurations win)");
  cmd->add_option("--system-interval-ms", o->system_interval_ms,
                  "System metrics interval, 100..60000 ms");
  cmd->add_flag("--no-system", o->no_system, "Do not sample system metrics");
  auto* metrics_port =
      cmd->add_option("--metrics-port", o->metrics_port,
                      "Serve Prometheus metrics on 127.0.0.1:PORT (0 to 65535; 0: any free port)");
  cmd->add_option("--rules-timeout", o->rules_timeout_s,
                  "Seconds (> 0) the rules may take after the training ends");
  cmd->add_option("--stop-grace", o->stop_grace_s,
                  "Seconds (>= 0) a stopped training gets before SIGTERM");
  cmd->add_flag("--isolate-rules", o->isolate_rules,
                "One worker process per rule (as SageMaker runs a container per rule), instead "
                "of one for the built-in debugging rules and one for the built-in profiler "
                "rules, each reading the trial once for all of its rules; costs more CPU");
  cmd->add_option("--rules-nice", o->rules_nice,
                  "Niceness added to the rule workers (0 to 19, default 10): on a machine whose "
                  "cores the training keeps busy they take what it leaves; 0: the training's "
                  "priority");
  cmd->add_flag("--json", o->json,
                "Print a JSON summary instead of the live view and table; stdout then holds only "
                "the JSON (the training's stdout goes to stderr)");
  cmd->add_option("--json-out", o->json_out,
                  "Also write the JSON summary to this file (stdout stays the training's)");
  cmd->add_option("command", o->command, "The training command, after --")->required();
  cmd->positionals_at_end();
  cmd->callback([o, exit_code, save_interval, metrics_port] {
    o->save_interval_given = save_interval->count() > 0;
    o->metrics_port_given = metrics_port->count() > 0;
    *exit_code = RunRun(*o);
  });
}

}  // namespace trainscope::cli
