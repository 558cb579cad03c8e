#include "trainscope/prometheus.h"

#include <chrono>

#include "actions/prometheus_text.h"

namespace trainscope {
namespace {

using actions_internal::ExpositionWriter;

constexpr std::string_view kVersion = "0.1.0";
constexpr std::string_view kPrefix = "trainscope_";

// Built-in families, so SetGauge cannot shadow them.
constexpr std::string_view kBuiltIn[] = {"rule_status",
                                         "rule_findings_total",
                                         "rule_last_finding_step",
                                         "rule_last_finding_timestamp_seconds",
                                         "step",
                                         "loss",
                                         "loss_step",
                                         "actions_total",
                                         "stop_requested",
                                         "scrapes_total",
                                         "info",
                                         "start_time_seconds"};

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Name(std::string_view suffix) { return std::string(kPrefix) + std::string(suffix); }

}  // namespace

void PrometheusExporter::SetRuleStatus(std::string_view rule, RuleEvaluationStatus status) {
  MutexLock lock(&mu_);
  auto it = rules_.find(rule);
  if (it == rules_.end()) it = rules_.emplace(std::string(rule), RuleState{}).first;
  it->second.status = status;
}

void PrometheusExporter::RecordFinding(const RuleFinding& f) {
  MutexLock lock(&mu_);
  auto it = rules_.find(f.rule);
  if (it == rules_.end()) it = rules_.emplace(f.rule, RuleState{}).first;
  RuleState& r = it->second;
  r.status = f.status;
  if (f.kind == FindingKind::kFinding) {
    ++r.findings;
    r.last_finding_step = f.step;
    r.last_finding_time =
        f.time_micros != 0 ? static_cast<double>(f.time_micros) / 1e6 : NowSeconds();
  }
  if (f.step >= 0) {
    std::string mode = f.mode ? std::string(ModeName(*f.mode)) : "";
    int64_t& s = steps_[mode];
    if (f.step > s) s = f.step;
  }
}

void PrometheusExporter::RecordStep(int64_t step, std::optional<Mode> mode) {
  MutexLock lock(&mu_);
  steps_[mode ? std::string(ModeName(*mode)) : ""] = step;
}

void PrometheusExporter::RecordLoss(double loss, int64_t step) {
  MutexLock lock(&mu_);
  loss_ = loss;
  loss_step_ = step;
}

void PrometheusExporter::RecordAction(const ActionOutcome& o) {
  MutexLock lock(&mu_);
  ++actions_[{o.action, std::string(ActionResultName(o.result))}];
}

void PrometheusExporter::SetStopRequested(bool requested) {
  MutexLock lock(&mu_);
  stop_requested_ = requested;
}

Status PrometheusExporter::SetGauge(std::string_view name, std::string_view help, double value) {
  if (!actions_internal::ValidMetricName(name)) {
    return Status::InvalidArgument("metrics: gauge name \"" + std::string(name) +
                                   "\" must match [a-zA-Z_:][a-zA-Z0-9_:]*");
  }
  for (std::string_view b : kBuiltIn) {
    if (name == b) {
      return Status::InvalidArgument("metrics: gauge name \"" + std::string(name) +
                                     "\" is a built-in metric; choose another");
    }
  }
  MutexLock lock(&mu_);
  gauges_[std::string(name)] = Gauge{std::string(help), value};
  return Status::OK();
}

std::string PrometheusExporter::Render() const {
  ExpositionWriter w;
  MutexLock lock(&mu_);

  w.Family(Name("info"), "trainscope build and trial being watched.", "gauge");
  w.Sample(Name("info"), {{"trial", trial_}, {"version", kVersion}}, 1);

  w.Family(Name("start_time_seconds"), "When this exporter started, in Unix seconds.", "gauge");
  w.Sample(Name("start_time_seconds"), {}, start_time_);

  w.Family(Name("rule_status"),
           "Current status of each rule: 1 for the status it is in, 0 for the others.", "gauge");
  for (const auto& [rule, r] : rules_) {
    for (RuleEvaluationStatus s : kAllRuleEvaluationStatuses) {
      w.Sample(Name("rule_status"), {{"rule", rule}, {"status", RuleEvaluationStatusName(s)}},
               s == r.status ? 1 : 0);
    }
  }

  w.Family(Name("rule_findings_total"), "Findings (conditions met) reported by each rule.",
           "counter");
  for (const auto& [rule, r] : rules_) {
    w.Sample(Name("rule_findings_total"), {{"rule", rule}}, static_cast<double>(r.findings));
  }

  w.Family(Name("rule_last_finding_step"), "Step of each rule's latest finding (-1: none).",
           "gauge");
  for (const auto& [rule, r] : rules_) {
    w.Sample(Name("rule_last_finding_step"), {{"rule", rule}},
             static_cast<double>(r.last_finding_step));
  }

  w.Family(Name("rule_last_finding_timestamp_seconds"),
           "Unix time of each rule's latest finding (0: none).", "gauge");
  for (const auto& [rule, r] : rules_) {
    w.Sample(Name("rule_last_finding_timestamp_seconds"), {{"rule", rule}}, r.last_finding_time);
  }

  w.Family(Name("step"), "Last training step seen, per mode (empty mode: not known).", "gauge");
  for (const auto& [mode, step] : steps_) {
    w.Sample(Name("step"), {{"mode", mode}}, static_cast<double>(step));
  }

  w.Family(Name("loss"), "Last loss value seen.", "gauge");
  if (loss_) w.Sample(Name("loss"), {}, *loss_);
  w.Family(Name("loss_step"), "Step at which the last loss was seen (-1: none).", "gauge");
  w.Sample(Name("loss_step"), {}, static_cast<double>(loss_step_));

  w.Family(Name("actions_total"),
           "Actions taken on findings, by action and result (done, failed, dropped, "
           "suppressed).",
           "counter");
  for (const auto& [key, n] : actions_) {
    w.Sample(Name("actions_total"), {{"action", key.first}, {"result", key.second}},
             static_cast<double>(n));
  }

  w.Family(Name("stop_requested"), "1 once a stop of the training has been requested.", "gauge");
  w.Sample(Name("stop_requested"), {}, stop_requested_ ? 1 : 0);

  w.Family(Name("scrapes_total"), "Scrapes of this endpoint.", "counter");
  w.Sample(Name("scrapes_total"), {}, static_cast<double>(scrapes_));

  for (const auto& [name, g] : gauges_) {
    w.Family(Name(name), g.help.empty() ? name : g.help, "gauge");
    w.Sample(Name(name), {}, g.value);
  }
  return w.text();
}

}  // namespace trainscope
