// ProfilerFeed: what the profiler wrote into a trial folder since the last look, for the profiler
// rules (docs/rules/README.md, "Profiler rules"). System metrics (system/, JSON lines appended as
// samples are taken) are read incrementally: only the complete lines added to each minute file
// since the last poll. The samples of each node's newest timestamp are held back until a newer
// sample shows (their lines may still be being written) or the data ends. Framework timelines
// (framework/pevents/, files that appear complete) are read once each, as they appear.
//
// Memory: bounded by what one poll returns; the feed keeps byte offsets of the minute files still
// growing and the names of the timeline files of the last hour it read.
//
// Thread safety: not thread-safe; one rule uses it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/metrics_reader.h"

namespace trainscope::rules_internal {

// One sample of one node: every system record with the same node and timestamp.
struct Datapoint {
  std::string node;
  int64_t ts_us = 0;
  std::vector<double> cpu;               // CPUUtilization per core (index = core; missing cores 0)
  std::vector<double> iowait;            // I/OWaitPercentage per core
  std::map<int, double> gpu_util;        // GPUUtilization per GPU index
  std::map<int, double> gpu_mem;         // GPUMemoryUtilization per GPU index
  std::optional<double> memory_percent;  // MemoryUsedPercent
  std::optional<double> process_rss_bytes;     // ProcessTreeResidentBytes
  std::optional<double> process_cpu_wait;      // ProcessTreeCPUWaitPercent
  std::optional<double> cpu_total_percent;     // CPUUtilizationTotal
  std::optional<double> iowait_total_percent;  // I/OWaitPercentageTotal
  std::optional<double> net_rx, net_tx;        // bytes/s
  double MaxCpu() const;
  double MaxIowait() const;
  double MeanCpu() const;  // node CPU: sum of per-core values / cores (smdebug's BatchSize)
  bool has_gpu() const { return !gpu_util.empty() || !gpu_mem.empty(); }
};

struct ProfilerBatch {
  std::vector<Datapoint> datapoints;     // sorted by time
  std::vector<TimelineEvent> framework;  // the events of newly seen timeline files, by start
  bool empty() const { return datapoints.empty() && framework.empty(); }
};

class ProfilerFeed {
 public:
  // `env` is not owned (nullptr: Env::Default()).
  ProfilerFeed(Env* env, std::string trial_dir);

  // What arrived since the last call. `final`: the data has ended, release held-back samples.
  ProfilerBatch Poll(bool final);
  // True while a timeline file is being written (a framework/*.tmp exists).
  bool TimelineOpen() const;

  // Earliest and latest timestamps seen so far (system samples and framework events), 0 if none.
  int64_t first_us() const { return first_us_; }
  int64_t last_us() const { return last_us_; }
  bool saw_system() const { return saw_system_; }
  bool saw_gpu() const { return saw_gpu_; }
  // Cores seen in CPUUtilization records (the most on any node), 0 if none.
  int cores() const { return cores_; }
  int64_t lines_skipped() const { return lines_skipped_; }

 private:
  void Note(int64_t ts);
  Env* env_;
  std::string trial_dir_;
  SystemMetricsReader system_;
  TimelineReader timeline_;
  std::map<std::string, uint64_t> offsets_;  // system file -> bytes consumed
  int64_t done_minute_us_ = 0;               // system files before this minute are read
  std::set<std::string> timeline_seen_;      // timeline files read (pruned by end time)
  std::map<std::string, Datapoint> held_;    // node -> newest (incomplete) sample
  int64_t first_us_ = 0, last_us_ = 0;
  bool saw_system_ = false, saw_gpu_ = false;
  int cores_ = 0;
  int64_t lines_skipped_ = 0;
};

// One ProfilerFeed read on behalf of the profiler rules of one RuleData (RuleData::
// profiler_feed()), so that several rules in one runner parse each timeline file and system line
// once. Each subscriber gets every batch once, whichever subscriber's Take read it: a subscriber
// that has taken everything read so far reads the files (Poll) and gets the new batch; the others
// then get that batch from memory. Batches are kept until every subscriber has taken them, at
// most kMaxPending of them: a subscriber that far behind (a rule the runner evaluates no more,
// after an error or end_of_rule) loses the oldest.
class SharedProfilerFeed {
 public:
  SharedProfilerFeed(Env* env, std::string trial_dir);

  // A new subscriber, which gets what is read from now on.
  size_t Subscribe();
  // What arrived since subscriber `id` last took. `final`: the data has ended (the feed's
  // held-back samples are released by the first final Take).
  std::shared_ptr<const ProfilerBatch> Take(size_t id, bool final);

  const ProfilerFeed& feed() const { return feed_; }
  bool TimelineOpen() const { return feed_.TimelineOpen(); }

  static constexpr size_t kMaxPending = 16;

 private:
  ProfilerFeed feed_;
  std::deque<std::shared_ptr<const ProfilerBatch>> batches_;
  uint64_t first_seq_ = 0;      // sequence number of batches_.front()
  std::vector<uint64_t> next_;  // per subscriber: the sequence number of its next batch
  bool final_read_ = false;
};

// "cpu12" -> 12 for prefix "cpu"; nullopt when the name is not prefix + digits.
std::optional<int> IndexAfter(const std::string& name, const char* prefix);

}  // namespace trainscope::rules_internal
