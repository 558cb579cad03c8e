#include "rules/prof_feed.h"

#include <algorithm>
#include <cctype>

#include "trainscope/profiler_format.h"

namespace trainscope::rules_internal {
namespace pf = profiler_format;

namespace {

constexpr int64_t kMinuteUs = 60'000'000;
// Timeline file names older than this (behind the newest) are forgotten: no file that old can
// still appear, since a file is named by the end of its last event and renamed when finished.
constexpr int64_t kTimelineMemoryUs = 2ll * 3600 * 1'000'000;

void SetAt(std::vector<double>& v, int i, double x) {
  if (i < 0 || i > 4096) return;
  if (v.size() <= static_cast<size_t>(i)) v.resize(static_cast<size_t>(i) + 1, 0.0);
  v[static_cast<size_t>(i)] = x;
}

void AddEvent(Datapoint& d, const SystemMetricEvent& e) {
  const std::string& dim = e.dimension;
  if (dim == pf::kDimCpuUtilization) {
    if (auto i = IndexAfter(e.name, "cpu")) SetAt(d.cpu, *i, e.value);
  } else if (dim == pf::kDimIoWaitPercentage) {
    if (auto i = IndexAfter(e.name, "cpu")) SetAt(d.iowait, *i, e.value);
  } else if (dim == pf::kDimGpuUtilization) {
    if (auto i = IndexAfter(e.name, "gpu")) d.gpu_util[*i] = e.value;
  } else if (dim == pf::kDimGpuMemoryUtilization) {
    if (auto i = IndexAfter(e.name, "gpu")) d.gpu_mem[*i] = e.value;
  } else if (dim == pf::kMemoryUsedPercent || e.name == pf::kMemoryUsedPercent) {
    d.memory_percent = e.value;
  } else if (dim == pf::kDimProcessTreeRss) {
    d.process_rss_bytes = e.value;
  } else if (dim == pf::kDimProcessTreeCpuWait) {
    d.process_cpu_wait = e.value;
  } else if (dim == pf::kDimCpuUtilizationTotal) {
    d.cpu_total_percent = e.value;
  } else if (dim == pf::kDimIoWaitPercentageTotal) {
    d.iowait_total_percent = e.value;
  } else if (dim == pf::kDimNetworkRxRate) {
    d.net_rx = e.value;
  } else if (dim == pf::kDimNetworkTxRate) {
    d.net_tx = e.value;
  }
}

}  // namespace

std::optional<int> IndexAfter(const std::string& name, const char* prefix) {
  const std::string p(prefix);
  if (name.size() <= p.size() || name.compare(0, p.size(), p) != 0) return std::nullopt;
  int v = 0;
  for (size_t i = p.size(); i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])) || v > 100000) return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

double Datapoint::MaxCpu() const {
  double m = 0;
  for (double v : cpu) m = std::max(m, v);
  return m;
}

double Datapoint::MaxIowait() const {
  double m = 0;
  for (double v : iowait) m = std::max(m, v);
  return m;
}

double Datapoint::MeanCpu() const {
  if (cpu.empty()) return cpu_total_percent.value_or(0.0);
  double s = 0;
  for (double v : cpu) s += v;
  return s / static_cast<double>(cpu.size());
}

ProfilerFeed::ProfilerFeed(Env* env, std::string trial_dir)
    : env_(env ? env : Env::Default()),
      trial_dir_(std::move(trial_dir)),
      system_(env_, trial_dir_),
      timeline_(env_, trial_dir_) {}

void ProfilerFeed::Note(int64_t ts) {
  if (ts <= 0) return;
  if (first_us_ == 0 || ts < first_us_) first_us_ = ts;
  last_us_ = std::max(last_us_, ts);
}

bool ProfilerFeed::TimelineOpen() const {
  auto children = env_->GetChildren(JoinPath(trial_dir_, pf::kFrameworkDir));
  if (!children.ok()) return false;
  for (const auto& c : *children) {
    if (c.size() > pf::kTmpSuffix.size() &&
        c.compare(c.size() - pf::kTmpSuffix.size(), pf::kTmpSuffix.size(), pf::kTmpSuffix) == 0) {
      return true;
    }
  }
  return false;
}

ProfilerBatch ProfilerFeed::Poll(bool final) {
  ProfilerBatch batch;
  ReaderStats stats;

  // ---- system metrics: the complete lines appended since the last poll ----
  (void)system_.Refresh();  // only lists files: a missing folder lists none (always OK)
  std::map<std::string, std::map<int64_t, Datapoint>> fresh;  // node -> ts -> sample
  for (auto& [node, d] : held_) fresh[node][d.ts_us] = std::move(d);
  held_.clear();
  int64_t newest_minute = 0;
  for (const SystemMetricsFile& f : system_.files()) {
    if (f.minute_us < done_minute_us_) continue;
    newest_minute = std::max(newest_minute, f.minute_us);
    auto size = env_->GetFileSize(f.path);
    if (!size.ok()) continue;
    uint64_t& offset = offsets_[f.path];
    if (*size <= offset) continue;
    // A file over the readers' bound is not read (SystemMetricsReader reports it).
    if (*size > profiler_format::kMaxReadFileBytes) continue;
    auto bytes = env_->ReadRange(f.path, offset, static_cast<size_t>(*size - offset));
    if (!bytes.ok()) continue;
    size_t end = bytes->rfind('\n');
    if (end == std::string::npos) {
      if (!final) continue;  // a line still being written
      end = bytes->size() - 1;
    }
    std::string_view complete(bytes->data(), end + 1);
    offset += complete.size();
    for (const SystemMetricEvent& e : SystemMetricsReader::ParseFile(complete, f.path, &stats)) {
      saw_system_ = true;
      Datapoint& d = fresh[e.node_id][e.timestamp_us];
      d.node = e.node_id;
      d.ts_us = e.timestamp_us;
      AddEvent(d, e);
      if (e.type == pf::kTypeGpu) saw_gpu_ = true;
    }
  }
  // Minute files more than two minutes behind the newest are finished: forget their offsets.
  if (newest_minute > 2 * kMinuteUs) {
    const int64_t done = newest_minute - 2 * kMinuteUs;
    if (done > done_minute_us_) {
      done_minute_us_ = done;
      for (const SystemMetricsFile& f : system_.files()) {
        if (f.minute_us < done_minute_us_) offsets_.erase(f.path);
      }
    }
  }
  for (auto& [node, samples] : fresh) {
    for (auto it = samples.begin(); it != samples.end(); ++it) {
      if (!final && std::next(it) == samples.end()) {
        held_[node] = std::move(it->second);
        break;
      }
      Note(it->first);
      cores_ = std::max(cores_, static_cast<int>(it->second.cpu.size()));
      batch.datapoints.push_back(std::move(it->second));
    }
  }
  std::stable_sort(batch.datapoints.begin(), batch.datapoints.end(),
                   [](const Datapoint& a, const Datapoint& b) { return a.ts_us < b.ts_us; });

  // ---- framework timelines: files not read yet ----
  (void)timeline_.Refresh();  // as above
  int64_t newest_end = 0;
  for (const TimelineFile& f : timeline_.files()) newest_end = std::max(newest_end, f.end_us);
  for (const TimelineFile& f : timeline_.files()) {
    if (f.end_us < newest_end - kTimelineMemoryUs) continue;
    if (!timeline_seen_.insert(f.path).second) continue;
    auto contents = env_->ReadFile(f.path, profiler_format::kMaxReadFileBytes);
    if (!contents.ok()) continue;
    for (TimelineEvent& e :
         TimelineReader::ParseFile(*contents, f.node_id, f.suffix, f.path, &stats)) {
      Note(e.start_us);
      Note(e.end_us());
      batch.framework.push_back(std::move(e));
    }
  }
  if (timeline_seen_.size() > 4096) {
    // Forget names that fell out of the window above (they are skipped by time anyway).
    std::set<std::string> keep;
    for (const TimelineFile& f : timeline_.files()) {
      if (f.end_us >= newest_end - kTimelineMemoryUs && timeline_seen_.count(f.path)) {
        keep.insert(f.path);
      }
    }
    timeline_seen_ = std::move(keep);
  }
  std::stable_sort(
      batch.framework.begin(), batch.framework.end(),
      [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_us < b.start_us; });
  lines_skipped_ += stats.lines_skipped;
  return batch;
}

SharedProfilerFeed::SharedProfilerFeed(Env* env, std::string trial_dir)
    : feed_(env, std::move(trial_dir)) {}

size_t SharedProfilerFeed::Subscribe() {
  next_.push_back(first_seq_ + batches_.size());
  return next_.size() - 1;
}

std::shared_ptr<const ProfilerBatch> SharedProfilerFeed::Take(size_t id, bool final) {
  uint64_t& next = next_[id];
  const uint64_t end = first_seq_ + batches_.size();
  if (next < first_seq_) next = first_seq_;  // it fell behind kMaxPending: the oldest are gone
  if (next == end || (final && !final_read_)) {
    auto batch = std::make_shared<ProfilerBatch>(feed_.Poll(final));
    final_read_ = final_read_ || final;
    if (!batch->empty()) batches_.push_back(std::move(batch));
  }
  std::shared_ptr<const ProfilerBatch> out;
  const uint64_t now_end = first_seq_ + batches_.size();
  if (now_end - next == 1) {
    out = batches_.back();
  } else if (now_end > next) {
    // Several batches (the subscriber skipped polls): one batch, each part in time order.
    auto merged = std::make_shared<ProfilerBatch>();
    for (uint64_t q = next; q < now_end; ++q) {
      const ProfilerBatch& b = *batches_[q - first_seq_];
      merged->datapoints.insert(merged->datapoints.end(), b.datapoints.begin(), b.datapoints.end());
      merged->framework.insert(merged->framework.end(), b.framework.begin(), b.framework.end());
    }
    std::stable_sort(merged->datapoints.begin(), merged->datapoints.end(),
                     [](const Datapoint& a, const Datapoint& b) { return a.ts_us < b.ts_us; });
    std::stable_sort(
        merged->framework.begin(), merged->framework.end(),
        [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_us < b.start_us; });
    out = std::move(merged);
  } else {
    out = std::make_shared<ProfilerBatch>();
  }
  next = now_end;
  // Drop what every subscriber has taken, and past kMaxPending the oldest.
  const uint64_t slowest = *std::min_element(next_.begin(), next_.end());
  while (!batches_.empty() && (first_seq_ < slowest || batches_.size() > kMaxPending)) {
    batches_.pop_front();
    ++first_seq_;
  }
  return out;
}

}  // namespace trainscope::rules_internal
