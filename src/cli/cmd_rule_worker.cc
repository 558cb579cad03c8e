// `trainscope rule-worker DIR --rule SPEC [--rule SPEC]... [--action SPEC]...`, or for a custom
// Python rule `trainscope rule-worker DIR --rule-file FILE.py:CLASS[:K=V,...] [--python PY] ...`
// (cli/python_rule.h): evaluates rules on a trial as it grows, writing rule-output/<Rule>/ for
// each and acting on findings. Several --rule share one RuleRunner, which reads each step once
// for all of them; they must be of one kind (debugging or profiler). `trainscope run` starts one
// worker for the built-in debugging rules, one for the built-in profiler rules and one per custom
// rule (--isolate-rules: one per rule). A rule that returns an error or throws ends in Error
// alone; a worker that crashes leaves each of its unfinished rules in Error (the supervisor
// writes it). SIGTERM or SIGINT ends it cleanly (statuses become final: Stopped if nothing was
// found).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "cli/python_rule.h"
#include "cli/rule_spec.h"
#include "cli/table.h"
#include "trainscope/action_set.h"
#include "trainscope/env.h"
#include "trainscope/event_log.h"
#include "trainscope/finding.h"
#include "trainscope/rule_output_format.h"
#include "trainscope/rule_registry.h"
#include "trainscope/rule_runner.h"
#include "trainscope/stop_action.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope::cli {
namespace {

struct WorkerOptions {
  std::string dir;
  std::vector<std::string> rules;  // --rule, once or more: evaluated by one runner
  std::string rule_file;           // a custom Python rule instead of --rule
  std::string python;              // its interpreter (default: ResolvePython({}))
  std::vector<std::string> actions;
};

// Writes a final status for a rule that never got to run (no trial data, bad rule).
// `parameters`: the rule's parameters in effect, when it was created (status.json's
// "parameters", as the runner writes them).
void WriteFinalStatus(const std::string& dir, const std::string& rule, const std::string& status,
                      const std::string& message, const RuleParams& parameters = {}) {
  Env* env = Env::Default();
  RuleState state;
  state.rule = rule;
  state.status = RuleEvaluationStatusFromName(status).value_or(RuleEvaluationStatus::kError);
  state.message = message;
  state.finished = true;
  state.parameters = parameters;
  if (Status s = WriteRuleState(env, dir, state, static_cast<int64_t>(env->NowMicros())); !s.ok()) {
    std::fprintf(stderr, "trainscope rule-worker: cannot write the final status of %s: %s\n",
                 rule.c_str(), EscapeForTerminal(s.ToString()).c_str());
  }
}

// Blocks SIGTERM/SIGINT in every thread and waits for them on one thread, which calls `on_signal`.
class SignalWaiter {
 public:
  explicit SignalWaiter(std::function<void()> on_signal) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGUSR1);  // used to wake the thread at exit
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this, on_signal = std::move(on_signal)] {
      int sig = 0;
      while (sigwait(&set_, &sig) == 0) {
        if (done_) return;
        signalled_ = true;
        on_signal();
      }
    });
  }
  ~SignalWaiter() {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGUSR1);
    thread_.join();
  }
  bool signalled() const { return signalled_; }

 private:
  sigset_t set_;
  std::atomic<bool> done_{false}, signalled_{false};
  std::thread thread_;
};

// The stub trial of a profiler rule: <dir>/.trainscope/profiler-rules/<Rule>/, with an empty
// collections file; the runner writes into <dir>/rule-output/ and the rule reads <dir>'s
// profiler data.
Result<std::unique_ptr<RuleRunner>> OpenProfilerStub(Env* env, const std::string& dir,
                                                     const std::string& rule, std::string* stub) {
  *stub = JoinPath(JoinPath(JoinPath(dir, ".trainscope"), "profiler-rules"), rule);
  // Usually absent (NotFound is the answer then); a stale marker that cannot be removed only
  // ends the stub's rule early, as its status then shows.
  (void)env->RemoveFile(JoinPath(*stub, trial_format::kEndOfJobFile));
  WriterOptions wo;
  wo.write_end_marker = false;
  wo.quiet = true;
  TS_ASSIGN_OR_RETURN(auto writer, TrialWriter::Open(*stub, wo));
  TS_RETURN_IF_ERROR(
      writer->WriteCollections(R"({"collections": {}, "_meta": {"num_workers": 1}})"));
  TS_RETURN_IF_ERROR(writer->Close());
  RunnerOptions ro;
  ro.output_dir = JoinPath(dir, rule_output_format::kRuleOutputDir);
  ro.profiler_dir = dir;
  return RuleRunner::Open(*stub, ro);
}

// Runner loop of a profiler rule: polls (the rule reads new metrics on its ticks) every 200 ms
// and ends the stub trial when the real one ends. The end marker is looked for every 50 ms in
// between (one stat), and once it is seen the loop polls every 50 ms, so the final verdicts
// follow the training's end without waiting out a poll.
Status RunProfilerStub(Env* env, const std::string& dir, const std::string& stub,
                       RuleRunner* runner) {
  const std::string end_file = JoinPath(dir, trial_format::kEndOfJobFile);
  bool ended = false;
  for (;;) {
    if (!ended && env->FileExists(end_file)) {
      TS_RETURN_IF_ERROR(WriteEndOfJob(env, stub));
      ended = true;
    }
    TS_ASSIGN_OR_RETURN(bool done, runner->Poll());
    if (done) return Status::OK();
    for (int slice = 0; slice < 4; ++slice) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (ended || env->FileExists(end_file)) break;
    }
  }
}

// The rules a worker evaluates, created from their specs. A rule that cannot be created gets
// its final Error status here and is left out; the others run.
struct WorkerRules {
  std::vector<RuleSpec> specs;               // of the rules created, in order
  std::vector<std::unique_ptr<Rule>> rules;  // one per spec
  bool profiler = false;                     // all profiler rules (else all debugging rules)
  bool some_failed = false;                  // a rule could not be created
};

Result<WorkerRules> CreateWorkerRules(const WorkerOptions& o) {
  WorkerRules out;
  const bool custom = !o.rule_file.empty();
  std::vector<RuleSpec> specs;
  for (const auto& text : custom ? std::vector<std::string>{o.rule_file} : o.rules) {
    auto spec = custom ? ParsePythonRuleSpec(text) : ParseRuleSpec(text);
    if (!spec.ok()) return spec.status();
    specs.push_back(std::move(*spec));
  }
  // One worker evaluates rules of one kind: debugging rules follow the trial's steps, profiler
  // rules its profile on a stub trial (see OpenProfilerStub); each rule once (its output folder
  // is its name).
  size_t profilers = 0;
  std::set<std::string> names;
  for (const auto& spec : specs) {
    if (!names.insert(spec.name).second) {
      return Status::InvalidArgument("rule " + spec.name +
                                     " is given twice: give each rule once (its output folder, "
                                     "rule-output/" +
                                     spec.name + "/, is its name)");
    }
    auto info = DescribeRule(spec.name);
    if (!custom && info.ok() && info->kind == "profiler") ++profilers;
  }
  if (profilers != 0 && profilers != specs.size()) {
    return Status::InvalidArgument(
        "a worker's rules must be all debugging rules or all profiler rules: start one worker "
        "for each kind (`trainscope rules` shows each rule's kind)");
  }
  out.profiler = profilers != 0;
  for (auto& spec : specs) {
    Result<std::unique_ptr<Rule>> rule =
        custom ? Result<std::unique_ptr<Rule>>(std::make_unique<PythonRule>(
                     o.python.empty() ? ResolvePython({}) : o.python, spec, spec.params))
               : CreateRule(spec.name, spec.params);
    if (!rule.ok()) {
      WriteFinalStatus(o.dir, spec.name, "Error", rule.status().message());
      std::fprintf(stderr, "trainscope rule-worker: %s\n", rule.status().message().c_str());
      out.some_failed = true;
      continue;
    }
    out.specs.push_back(std::move(spec));
    out.rules.push_back(std::move(*rule));
  }
  return out;
}

// Ends every rule of the worker with a final status (it could not run).
void WriteFinalStatuses(const WorkerOptions& o, const WorkerRules& w, const std::string& status,
                        const std::string& message) {
  for (size_t i = 0; i < w.rules.size(); ++i) {
    WriteFinalStatus(o.dir, w.specs[i].name, status, message, w.rules[i]->Parameters());
  }
}

int RunWorker(const WorkerOptions& o) {
  if (o.rules.empty() == o.rule_file.empty()) {
    std::fprintf(stderr, "trainscope rule-worker: give --rule (once or more) or one --rule-file\n");
    return kExitUsage;
  }
  auto created = CreateWorkerRules(o);
  if (!created.ok()) {
    std::fprintf(stderr, "trainscope rule-worker: %s\n", created.status().message().c_str());
    return kExitUsage;
  }
  WorkerRules& w = *created;
  if (w.rules.empty()) return kExitUsage;  // each rule's status says why
  const std::string names = [&] {
    std::string n;
    for (const auto& spec : w.specs) n += (n.empty() ? "" : ",") + spec.name;
    return n;
  }();
  Env* env = Env::Default();
  std::atomic<bool> stop{false};
  std::atomic<RuleRunner*> live_runner{nullptr};
  SignalWaiter signals([&] {
    stop = true;
    if (RuleRunner* r = live_runner.load()) r->Stop();
  });

  // A profiler rule reads system/ and framework/, not tensors: it must not wait for the hook's
  // tensors (a training may be profiled without saving any). Profiler rules run on a stub trial
  // of their own whose end marker follows the real one, and read the profiler data of o.dir.
  std::string stub;
  std::unique_ptr<RuleRunner> runner;
  if (w.profiler) {
    auto r = OpenProfilerStub(env, o.dir, w.specs.size() == 1 ? names : "shared", &stub);
    if (!r.ok()) {
      WriteFinalStatuses(o, w, "Error", r.status().message());
      std::fprintf(stderr, "trainscope rule-worker %s: %s\n", names.c_str(),
                   EscapeForTerminal(r.status().message()).c_str());
      return kExitFailure;
    }
    runner = std::move(*r);
  }
  // Wait for the trial's collections file: the training may take a while to save its first step.
  for (; !runner;) {
    auto r = RuleRunner::Open(o.dir);
    if (r.ok()) {
      runner = std::move(*r);
      break;
    }
    const bool ended = env->FileExists(JoinPath(o.dir, trial_format::kEndOfJobFile));
    if (r.status().code() != StatusCode::kUnavailable &&
        r.status().code() != StatusCode::kNotFound) {
      WriteFinalStatuses(o, w, "Error", r.status().message());
      std::fprintf(stderr, "trainscope rule-worker %s: %s\n", names.c_str(),
                   EscapeForTerminal(r.status().message()).c_str());
      return kExitFailure;
    }
    if (ended || stop) {
      WriteFinalStatuses(o, w, ended ? "Error" : "Stopped",
                         "No debugging data was saved by the training: check that the training "
                         "script creates a trainscope hook (e.g. Hook.create_from_json_file()) "
                         "and registers its model");
      return ended ? kExitFailure : kExitOk;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  EventLog* log = nullptr;
  std::unique_ptr<EventLog> event_log;
  if (auto l = EventLog::Open(env, o.dir); l.ok()) {
    event_log = std::move(*l);
    log = event_log.get();
  }
  // Each rule's actions: --action's for every rule, then its spec's own. Rules with the same
  // actions share one ActionSet (its min_interval_s is kept per rule).
  std::map<std::string, std::unique_ptr<ActionSet>> action_sets;  // by action spec
  std::map<std::string, ActionSet*> actions_of;                   // by rule
  bool some_failed = w.some_failed;
  for (size_t i = 0; i < w.rules.size();) {
    std::string all_actions;
    for (const auto& a : o.actions) all_actions += (all_actions.empty() ? "" : ";") + a;
    const RuleSpec& spec = w.specs[i];
    if (!spec.actions.empty()) all_actions += (all_actions.empty() ? "" : ";") + spec.actions;
    auto& set = action_sets[all_actions];
    if (!set) {
      auto created_set = ActionSet::Create(all_actions, ActionContext{env, o.dir, log, nullptr});
      if (!created_set.ok()) {
        WriteFinalStatus(o.dir, spec.name, "Error", created_set.status().message(),
                         w.rules[i]->Parameters());
        std::fprintf(stderr, "trainscope rule-worker: %s\n",
                     created_set.status().message().c_str());
        action_sets.erase(all_actions);
        w.specs.erase(w.specs.begin() + static_cast<std::ptrdiff_t>(i));
        w.rules.erase(w.rules.begin() + static_cast<std::ptrdiff_t>(i));
        some_failed = true;
        continue;
      }
      set = std::move(*created_set);
    }
    actions_of[spec.name] = set.get();
    ++i;
  }
  if (w.rules.empty()) return kExitUsage;
  runner->AddSink([&actions_of, env, dir = o.dir](const RuleFinding& f, const std::string&) {
    // Every action is tried whatever fails; what failed goes to the worker's log (stderr).
    if (auto it = actions_of.find(f.rule); it != actions_of.end()) {
      if (Status s = it->second->Dispatch(f); !s.ok()) {
        std::fprintf(stderr, "trainscope: an action for a finding of %s failed: %s\n",
                     f.rule.c_str(), EscapeForTerminal(s.ToString()).c_str());
      }
    }
    if (f.stop_training) {
      if (Status s = StopSignal::Raise(env, dir, StopRequestFromFinding(f)); !s.ok()) {
        std::fprintf(stderr, "trainscope: %s asked to stop the training, but: %s\n", f.rule.c_str(),
                     EscapeForTerminal(s.ToString()).c_str());
      }
    }
  });
  for (auto& rule : w.rules) {
    if (Status added = runner->AddRule(std::move(rule)); !added.ok()) {
      std::fprintf(stderr, "trainscope rule-worker: %s\n", added.message().c_str());
      return kExitFailure;
    }
  }
  live_runner = runner.get();
  if (stop) runner->Stop();
  Status s = w.profiler ? RunProfilerStub(env, o.dir, stub, runner.get()) : runner->Run();
  live_runner = nullptr;
  for (auto& [spec, set] : action_sets) set->Close(std::chrono::seconds(10));
  if (!s.ok()) {
    std::fprintf(stderr, "trainscope rule-worker: %s\n", EscapeForTerminal(s.ToString()).c_str());
  }
  bool issues = false;
  for (const auto& st : runner->states()) {
    if (st.status == RuleEvaluationStatus::kError) some_failed = true;
    if (st.status == RuleEvaluationStatus::kIssuesFound) issues = true;
  }
  // A rule in Error outranks another's findings: the supervisor then checks every status.
  if (some_failed || !s.ok()) return kExitFailure;
  return issues ? kExitIssuesFound : kExitOk;
}

}  // namespace

void RegisterRuleWorker(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<WorkerOptions>();
  auto* cmd =
      app.add_subcommand("rule-worker", "Evaluate rules on a trial as it grows (started by `run`)");
  cmd->add_option("dir", o->dir, "Trial folder")->required();
  cmd->add_option("--rule", o->rules,
                  "NAME[:KEY=VALUE,...][@ACTIONS]; repeatable: the rules (all debugging or all "
                  "profiler rules) share one reading of the trial");
  cmd->add_option("--rule-file", o->rule_file, "FILE.py:CLASS[:KEY=VALUE,...][@ACTIONS]");
  cmd->add_option("--python", o->python, "The Python interpreter of a --rule-file rule");
  cmd->add_option("--action", o->actions, "Action spec for every finding (docs/actions.md)");
  cmd->group("");  // internal: hidden from --help
  cmd->callback([o, exit_code] { *exit_code = RunWorker(*o); });
}

}  // namespace trainscope::cli
