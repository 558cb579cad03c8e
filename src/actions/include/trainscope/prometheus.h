// PrometheusExporter: the training's state as Prometheus metrics (text exposition format 0.0.4,
// docs/formats/metrics.md), rendered on demand and served over HTTP on a loopback port.
//
// Metrics (all names prefixed "trainscope_"):
//   rule_status{rule,status}                gauge, 1 for the rule's current status, 0 for others
//   rule_findings_total{rule}               counter
//   rule_last_finding_step{rule}            gauge
//   rule_last_finding_timestamp_seconds{rule} gauge
//   step{mode}                              gauge, the last step seen (per mode)
//   loss / loss_step                        gauge, the last loss and the step it was seen at
//   actions_total{action,result}            counter (result: done, failed, dropped, suppressed)
//   stop_requested                          gauge 0/1
//   scrapes_total                           counter (this endpoint's scrapes)
//   info{trial,version}                     gauge 1
//   start_time_seconds                      gauge
// plus gauges set by name (SetGauge).
//
// Thread safety: every method may be called from any thread; updates are serialised by one mutex
// and cost a map lookup. Render takes the same mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/action.h"
#include "trainscope/finding.h"
#include "trainscope/modes.h"
#include "trainscope/status.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

class PrometheusExporter {
 public:
  // `trial` is reported in trainscope_info; may be empty.
  explicit PrometheusExporter(std::string trial = "");
  ~PrometheusExporter();  // stops serving
  PrometheusExporter(const PrometheusExporter&) = delete;
  PrometheusExporter& operator=(const PrometheusExporter&) = delete;

  // --- updates ---
  void SetRuleStatus(std::string_view rule, RuleEvaluationStatus status);
  // A finding counts toward rule_findings_total and sets the rule's status; a status change only
  // sets the status. Either advances step{mode} when the finding carries a step.
  void RecordFinding(const RuleFinding& finding);
  void RecordStep(int64_t step, std::optional<Mode> mode = std::nullopt);
  void RecordLoss(double loss, int64_t step);
  void RecordAction(const ActionOutcome& outcome);
  void SetStopRequested(bool requested);
  // A gauge of the caller's: `name` gets the "trainscope_" prefix. InvalidArgument when the name
  // is not [a-zA-Z_:][a-zA-Z0-9_:]* or clashes with a built-in metric.
  Status SetGauge(std::string_view name, std::string_view help, double value);

  // The whole exposition, every line ending in '\n'.
  std::string Render() const;

  // --- HTTP ---
  // How the endpoint treats its clients. One thread polls every connection, so an idle, slow or
  // half-closed client never delays another; each answer closes its connection.
  struct ServeLimits {
    // Connections open at once; one more is answered 503 and closed.
    int max_connections = 64;
    // A client has this long from connecting to send its request's whole header, and again from
    // then to take the answer; then it is dropped.
    std::chrono::milliseconds request_timeout{5000};
  };
  // Serves GET /metrics (and "/" with a pointer to it; HEAD too) on host:port from a background
  // thread. port 0 picks a free port. Returns the port. IOError naming host:port when it cannot
  // bind. REQUIRES: not serving.
  Result<int> Serve(const std::string& host = "127.0.0.1", int port = 0);
  Result<int> Serve(const std::string& host, int port, const ServeLimits& limits);
  // Stops serving; idempotent.
  void StopServing();
  // The port being served, or 0.
  int port() const;

 private:
  struct RuleState {
    RuleEvaluationStatus status = RuleEvaluationStatus::kInProgress;
    uint64_t findings = 0;
    int64_t last_finding_step = -1;
    double last_finding_time = 0;  // seconds since the epoch; 0 when none
  };
  struct Gauge {
    std::string help;
    double value;
  };
  struct Server;

  const std::string trial_;
  const double start_time_;
  mutable Mutex mu_;
  std::map<std::string, RuleState, std::less<>> rules_ TS_GUARDED_BY(mu_);
  std::map<std::string, int64_t, std::less<>> steps_ TS_GUARDED_BY(mu_);  // by mode name
  std::optional<double> loss_ TS_GUARDED_BY(mu_);
  int64_t loss_step_ TS_GUARDED_BY(mu_) = -1;
  std::map<std::pair<std::string, std::string>, uint64_t> actions_ TS_GUARDED_BY(mu_);
  bool stop_requested_ TS_GUARDED_BY(mu_) = false;
  std::map<std::string, Gauge, std::less<>> gauges_ TS_GUARDED_BY(mu_);
  uint64_t scrapes_ TS_GUARDED_BY(mu_) = 0;
  mutable Mutex server_mu_;
  std::unique_ptr<Server> server_ TS_GUARDED_BY(server_mu_);
};

}  // namespace trainscope
