// MetricsFeed: what the Prometheus endpoint shows while `trainscope run` supervises a training,
// besides each rule's status: each finding as the rule workers append it to
// rule-output/<Rule>/events.jsonl, each action outcome as they log it to the trial's event log
// (rule-output/events.log.jsonl), and the training's last step and newest loss from the trial.
//
// Thread safety: not thread-safe; one thread polls. The exporter it feeds is thread-safe and
// serves from its own thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "trainscope/env.h"
#include "trainscope/finding.h"
#include "trainscope/prometheus.h"
#include "trainscope/trial.h"

namespace trainscope {

class MetricsFeed {
 public:
  // `metrics` and `env` are not owned and must outlive the feed; null env means Env::Default().
  MetricsFeed(PrometheusExporter* metrics, std::string trial_dir, Env* env = nullptr);

  // Reads what is new since the last call. `rules`: each rule under rule-output/ with its status
  // when its status.json could be read (nullopt: not readable; its findings are still counted).
  // Only whole lines are read: a line a worker is still appending is read on a later call. Never
  // fails: what cannot be read now is read later; a damaged event log stops the action count
  // (said once on stderr), not the feed.
  void Poll(const std::map<std::string, std::optional<RuleEvaluationStatus>>& rules);

 private:
  void ReadNewFindings(const std::string& rule);
  void ReadNewActions();
  void FollowTrial();

  PrometheusExporter* metrics_;
  std::string trial_path_;
  Env* env_;
  std::unique_ptr<Trial> trial_;
  std::map<std::string, uint64_t> events_offset_;  // bytes of each rule's events.jsonl read
  uint64_t log_offset_ = 0;                        // bytes of events.log.jsonl read
  bool log_broken_ = false;
  int64_t loss_checked_step_ = -1, loss_step_ = -1;
};

}  // namespace trainscope
