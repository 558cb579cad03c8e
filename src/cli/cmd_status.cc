// `trainscope status DIR [--json]`: the rules' statuses of a running or finished trial.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/rule_status.h"
#include "cli/table.h"
#include "cli/trial_folder.h"
#include "trainscope/diagnosis.h"
#include "trainscope/env.h"
#include "trainscope/out_dir_lock.h"
#include "trainscope/rule_registry.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"

namespace trainscope::cli {

nlohmann::json TypedParamValue(ParamType type, const std::string& v) {
  if (v == "None") return nullptr;
  char* end = nullptr;
  switch (type) {
    case ParamType::kDouble: {
      const double d = std::strtod(v.c_str(), &end);
      if (!v.empty() && *end == '\0') return d;
      break;
    }
    case ParamType::kInt: {
      const long long i = std::strtoll(v.c_str(), &end, 10);
      if (!v.empty() && *end == '\0') return static_cast<int64_t>(i);
      break;
    }
    case ParamType::kBool:
      if (v == "True" || v == "true" || v == "1") return true;
      if (v == "False" || v == "false" || v == "0") return false;
      break;
    case ParamType::kStringList:
      return SplitParamList(v);
    case ParamType::kDoubleList: {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& item : SplitParamList(v)) {
        const double d = std::strtod(item.c_str(), &end);
        if (item.empty() || *end != '\0') return v;
        list.push_back(d);
      }
      return list;
    }
    case ParamType::kString:
      if (v.empty()) return nullptr;
      break;
  }
  return v;
}

const char* ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kDouble:
      return "number";
    case ParamType::kInt:
      return "integer";
    case ParamType::kBool:
      return "boolean";
    case ParamType::kString:
      return "string";
    case ParamType::kStringList:
      return "list of strings";
    case ParamType::kDoubleList:
      return "list of numbers";
  }
  return "string";
}

namespace {

nlohmann::json TypedParams(const std::string& rule, const nlohmann::json& params) {
  auto info = DescribeRule(rule);
  if (!info.ok() || !params.is_object()) return params;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : params.items()) {
    out[k] = v;
    if (!v.is_string()) continue;
    for (const auto& p : info->params) {
      if (p.name == k) out[k] = TypedParamValue(p.type, v.get<std::string>());
    }
  }
  return out;
}

}  // namespace

nlohmann::json StatusesJson(const std::vector<RuleStatusView>& rules) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rules) {
    nlohmann::json j = r.raw.is_object() ? r.raw : nlohmann::json::object();
    j["rule"] = r.rule;
    j["status"] = r.status;
    if (j.contains("parameters")) j["parameters"] = TypedParams(r.rule, j["parameters"]);
    if (!r.error.empty()) j["error"] = r.error;
    if (!r.first_finding.is_null()) j["first_finding"] = r.first_finding;
    out.push_back(j);
  }
  return out;
}

std::string RenderStatusTable(const std::vector<RuleStatusView>& rules) {
  if (rules.empty()) return "no rule ran on this trial\n";
  Table t({"rule", "status", "findings", "first at step", "what it saw"});
  for (const auto& r : rules) {
    std::string what = r.message;
    if (r.first_finding.is_object()) what = JsonString(r.first_finding, "explanation", what);
    t.AddRow({r.rule, r.status, std::to_string(r.findings),
              r.first_finding_step >= 0 ? std::to_string(r.first_finding_step) : "-", what});
  }
  return t.Render(60, OutputWidth());
}

namespace {

std::vector<Diagnosis> DiagnoseStatuses(const std::vector<RuleStatusView>& rules) {
  std::vector<RuleFinding> findings;
  for (const auto& r : rules) {
    if (!r.first_finding.is_object()) continue;
    // The line through the findings' one codec (finding.h); one it rejects diagnoses nothing.
    auto f = RuleFindingFromEventsLine(
        r.first_finding.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), r.rule);
    if (!f.ok()) continue;
    f->rule = r.rule;  // the folder's name, as the table shows it
    findings.push_back(std::move(f).value());
  }
  return Diagnose(std::move(findings));
}

// "DeadRelu at step 20 on relu1_output_0".
std::string FindingHeadline(const RuleFinding& f) {
  std::string text = f.rule;
  if (f.step >= 0) text += " at step " + std::to_string(f.step);  // profiler findings: none
  if (!f.tensor.empty()) text += " on " + f.tensor;
  return text;
}

nlohmann::json StepJson(int64_t step) { return step >= 0 ? nlohmann::json(step) : nullptr; }

}  // namespace

std::string RenderDiagnoses(const std::vector<RuleStatusView>& rules) {
  const auto diagnoses = DiagnoseStatuses(rules);
  const size_t width = OutputWidth() > 12 ? OutputWidth() - 4 : 60;
  std::string out;
  auto wrapped = [&](const std::string& text, const std::string& indent) {
    for (const auto& line : WrapText(EscapeForTerminal(text), width + 4 - indent.size())) {
      out += indent + line + "\n";
    }
  };
  for (const auto& d : diagnoses) {
    const bool chain = d.stage != "other";
    out += "\n";
    wrapped(FindingHeadline(d.cause) +
                (chain && !d.evidence.empty()
                     ? " (" + d.stage + ": the likely root cause of the " +
                           std::to_string(d.evidence.size()) +
                           (d.evidence.size() == 1 ? " finding" : " findings") + " below):"
                     : ":"),
            "");
    wrapped(d.cause.explanation, "  ");
    if (!d.cause.recommendation.empty()) wrapped("what to do: " + d.cause.recommendation, "  ");
    for (const auto& e : d.evidence) {
      wrapped("follows from it: " + FindingHeadline(e) + ": " + e.explanation, "  ");
    }
  }
  return out;
}

nlohmann::json DiagnosesJson(const std::vector<RuleStatusView>& rules) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : DiagnoseStatuses(rules)) {
    nlohmann::json evidence = nlohmann::json::array();
    for (const auto& e : d.evidence) {
      evidence.push_back({{"rule", e.rule},
                          {"step", StepJson(e.step)},
                          {"tensor", e.tensor},
                          {"explanation", e.explanation}});
    }
    out.push_back({{"cause", d.cause.rule},
                   {"stage", d.stage},
                   {"step", StepJson(d.cause.step)},
                   {"tensor", d.cause.tensor},
                   {"explanation", d.cause.explanation},
                   {"recommendation", d.cause.recommendation},
                   {"evidence", std::move(evidence)}});
  }
  return out;
}

int RulesExitCode(const std::vector<RuleStatusView>& rules) {
  bool issues = false, error = false, unreadable = false;
  for (const auto& r : rules) {
    issues |= r.status == "IssuesFound";
    error |= r.status == "Error";
    unreadable |= !r.error.empty();
  }
  return unreadable ? kExitUnreadable
         : issues   ? kExitIssuesFound
         : error    ? kExitRuleError
                    : kExitOk;
}

std::optional<LastStep> LastSavedStep(const std::string& trial_dir) {
  auto trial = Trial::Open(trial_dir);
  if (!trial.ok()) return std::nullopt;
  const auto steps = (*trial)->Steps(Mode::kGlobal, /*show_incomplete=*/true);
  if (steps.empty()) return std::nullopt;
  return LastStep{steps.back(), (*trial)->training_ended()};
}

std::string DescribeStop(const nlohmann::json& stop, const std::string& trial_dir) {
  const int64_t step = JsonInt(stop, "step", -1);
  std::string head = "training was STOPPED by " + JsonString(stop, "rule", "a person or a script") +
                     (step >= 0 ? " at step " + std::to_string(step) : std::string()) + ": " +
                     JsonString(stop, "explanation", "(no explanation given)");
  std::string where;
  if (auto last_step = LastSavedStep(trial_dir)) {
    const int64_t last = last_step->step;
    where = std::string(last_step->training_ended ? "the training stopped at step "
                                                  : "the training has saved up to step ") +
            std::to_string(last) + " (its last saved step)";
    if (step >= 0 && last > step) {
      const int64_t later = last - step;
      where += ", " + std::to_string(later) + (later == 1 ? " step" : " steps") +
               " after the finding: the rule evaluates each step after the training has saved "
               "it, in a process of its own, and the training checks for the stop request at "
               "its step boundaries (at most every 10 ms), so it runs on while the rule reads, "
               "evaluates and asks";
    }
  }
  // Wrapped like the tables, the second part indented under the first.
  const size_t width = OutputWidth() > 12 ? OutputWidth() - 2 : 60;
  std::string out;
  for (const auto& line : WrapText(EscapeForTerminal(head), width + 2)) out += line + "\n";
  if (!where.empty()) {
    for (const auto& line : WrapText(where, width)) out += "  " + line + "\n";
  }
  return out;
}

std::vector<IncompleteMarker> IncompleteMarkers(const std::string& trial_dir) {
  auto markers = ReadIncompleteMarkers(trial_dir);
  return markers.ok() ? std::move(*markers) : std::vector<IncompleteMarker>{};
}

nlohmann::json IncompleteJson(const std::vector<IncompleteMarker>& markers) {
  if (markers.empty()) return nullptr;
  auto count = [](int64_t v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  int64_t lost = 0;
  nlohmann::json workers = nlohmann::json::array();
  for (const IncompleteMarker& m : markers) {
    if (m.steps_failed > 0) lost += m.steps_failed;
    if (m.steps_dropped > 0) lost += m.steps_dropped;
    workers.push_back(
        {{"worker", m.worker},
         {"path", m.path},
         {"readable", m.readable},
         {"problem", m.readable ? nlohmann::json(nullptr) : nlohmann::json(m.problem)},
         {"final", m.final},
         {"steps_written", count(m.steps_written)},
         {"steps_failed", count(m.steps_failed)},
         {"steps_dropped", count(m.steps_dropped)},
         {"first_lost_step", count(m.first_lost_step)},
         {"first_error",
          m.first_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.first_error)}});
  }
  return {{"steps_lost", lost}, {"workers", std::move(workers)}};
}

std::string DescribeIncomplete(const std::vector<IncompleteMarker>& markers) {
  if (markers.empty()) return "";
  const size_t width = OutputWidth() > 12 ? OutputWidth() - 2 : 60;
  std::string out;
  for (const IncompleteMarker& m : markers) {
    std::string head = "the trial is INCOMPLETE: worker " + m.worker;
    std::string more;
    if (m.readable) {
      const int64_t lost =
          std::max<int64_t>(m.steps_failed, 0) + std::max<int64_t>(m.steps_dropped, 0);
      head += " lost " + std::to_string(lost) + (lost == 1 ? " step" : " steps");
      if (m.steps_written >= 0) {
        head += " (" + std::to_string(m.steps_written) + " written, " +
                std::to_string(std::max<int64_t>(m.steps_failed, 0)) + " failed, " +
                std::to_string(std::max<int64_t>(m.steps_dropped, 0)) + " dropped" +
                (m.final ? "" : "; counts so far, the training did not close the trial") + ")";
      }
      if (m.first_lost_step >= 0) head += ", from step " + std::to_string(m.first_lost_step);
      if (!m.first_error.empty()) more = "first error: " + m.first_error;
    } else {
      head += " lost steps (its marker is " + m.problem + ")";
    }
    more += std::string(more.empty() ? "" : "; ") + "the rules judged the saved steps only; see " +
            m.path;
    for (const auto& line : WrapText(EscapeForTerminal(head), width + 2)) out += line + "\n";
    for (const auto& line : WrapText(EscapeForTerminal(more), width)) out += "  " + line + "\n";
  }
  return out;
}

int WithIncomplete(int code, bool incomplete) {
  return incomplete && (code == kExitOk || code == kExitRuleError) ? kExitIncomplete : code;
}

namespace {

int RunStatus(const std::string& dir, bool json) {
  if (Status s = CheckTrialFolder(dir); !s.ok()) {
    std::fprintf(stderr, "trainscope status: %s\n", EscapeForTerminal(s.message()).c_str());
    return kExitFailure;
  }
  Env* env = Env::Default();
  auto rules = ReadRuleStatuses(dir);
  auto stop = ReadStopRequest(dir);
  bool ended = env->FileExists(JoinPath(dir, trial_format::kEndOfJobFile));
  // Not ended and nobody holds the folder: the training died without its end marker.
  const std::optional<std::string> writer =
      ended ? std::optional<std::string>() : capture::DescribeFolderWriters(dir);
  const bool orphaned = writer && writer->empty();
  for (const auto& r : rules) {
    if (!r.error.empty()) {
      std::fprintf(stderr, "trainscope status: rule %s: its status file %s\n",
                   EscapeForTerminal(r.rule).c_str(), EscapeForTerminal(r.error).c_str());
    }
  }
  const auto incomplete = IncompleteMarkers(dir);
  const int code = WithIncomplete(RulesExitCode(rules), !incomplete.empty());
  if (json) {
    nlohmann::json j{{"trial", dir}, {"training_ended", ended}, {"rules", StatusesJson(rules)}};
    // false: the training ended without its end marker (no writer holds the folder); null: ended,
    // or nobody to ask (no run.lock).
    j["writer_alive"] = (ended || !writer) ? nlohmann::json(nullptr) : nlohmann::json(!orphaned);
    j["diagnosis"] = DiagnosesJson(rules);
    j["incomplete"] = IncompleteJson(incomplete);
    j["exit_code"] = code;
    j["stop_request"] = stop ? *stop : nlohmann::json(nullptr);
    auto last = LastSavedStep(dir);
    j["last_saved_step"] = last ? nlohmann::json(last->step) : nlohmann::json(nullptr);
    std::cout << DumpJson(j) << "\n";
  } else {
    std::cout << "trial " << EscapeForTerminal(dir)
              << (ended      ? "  (training ended)"
                  : orphaned ? "  (no writer: the training ended without its end marker, killed "
                               "or crashed; `trainscope recover DIR --end` marks it ended)"
                             : "  (in progress)")
              << "\n\n";
    if (rules.empty()) {
      std::cout
          << "no rule has run on this trial (run one with `trainscope run --rule NAME -- ...`)\n";
    } else {
      std::cout << RenderStatusTable(rules) << RenderDiagnoses(rules);
    }
    if (stop) std::cout << "\n" << DescribeStop(*stop, dir);
    if (!incomplete.empty()) std::cout << "\n" << DescribeIncomplete(incomplete);
  }
  return code;
}

}  // namespace

void RegisterStatus(CLI::App& app, int* exit_code) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("status", "Show the rules' statuses of a trial");
  cmd->add_option("dir", *dir, "Trial folder")->required();
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([=] { *exit_code = RunStatus(*dir, *json); });
}

}  // namespace trainscope::cli
