#include "profiler/sample_compute.h"

namespace trainscope::proc {
namespace {

// cur - prev, or nullopt when the counter went backwards.
std::optional<uint64_t> Delta(uint64_t cur, uint64_t prev) {
  if (cur < prev) return std::nullopt;
  return cur - prev;
}

uint64_t SatSub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// Percent busy and percent iowait of one CPU line between two snapshots.
void CpuPercents(const CpuTimes& a, const CpuTimes& b, double* busy, double* iowait) {
  uint64_t d_total = SatSub(b.Total(), a.Total());
  if (d_total == 0) {
    *busy = 0;
    *iowait = 0;
    return;
  }
  uint64_t d_idle = SatSub(b.idle, a.idle);
  uint64_t d_iowait = SatSub(b.iowait, a.iowait);
  uint64_t d_busy = SatSub(d_total, d_idle + d_iowait);
  *busy = 100.0 * static_cast<double>(d_busy) / static_cast<double>(d_total);
  *iowait = 100.0 * static_cast<double>(d_iowait) / static_cast<double>(d_total);
}

}  // namespace

void ComputeSample(const RawSnapshot* prev, const RawSnapshot& cur, int64_t ticks_per_s,
                   int64_t page_size, SystemSample* out) {
  std::vector<GpuMetrics> gpus = std::move(out->gpus);
  *out = SystemSample();
  out->gpus = std::move(gpus);
  out->timestamp_us = cur.timestamp_us;

  // Levels.
  if (cur.mem && cur.mem->total_bytes > 0) {
    out->memory_total_bytes = cur.mem->total_bytes;
    out->memory_used_bytes = cur.mem->total_bytes - cur.mem->available_bytes;
    out->memory_used_percent = 100.0 * static_cast<double>(*out->memory_used_bytes) /
                               static_cast<double>(cur.mem->total_bytes);
  }
  if (cur.process_count) {
    out->process_count = *cur.process_count;
    out->process_rss_bytes =
        static_cast<uint64_t>(cur.process_rss_pages) * static_cast<uint64_t>(page_size);
  }
  out->cgroup_memory_max_bytes = cur.cgroup_memory_max;
  out->cgroup_memory_current_bytes = cur.cgroup_memory_current;
  out->cgroup_cpu_limit_cores = cur.cgroup_cpu_limit_cores;

  if (prev == nullptr || cur.timestamp_us <= prev->timestamp_us) return;
  const double secs = static_cast<double>(cur.timestamp_us - prev->timestamp_us) / 1e6;
  out->has_rates = true;
  out->interval_seconds = secs;

  if (cur.cpu && prev->cpu) {
    CpuPercents(prev->cpu->total, cur.cpu->total, &out->cpu_total_percent,
                &out->iowait_total_percent);
    size_t n = cur.cpu->cores.size();
    out->cpu_core_percent.assign(n, 0.0);
    out->iowait_core_percent.assign(n, 0.0);
    for (size_t i = 0; i < n && i < prev->cpu->cores.size(); ++i) {
      CpuPercents(prev->cpu->cores[i], cur.cpu->cores[i], &out->cpu_core_percent[i],
                  &out->iowait_core_percent[i]);
    }
  }
  if (cur.process_count && prev->process_count) {
    // Only members present in both snapshots: a new member's lifetime ticks are not this
    // interval's, and an exited member's last ticks cannot be read.
    uint64_t ticks = 0;
    for (const auto& [pid, t] : cur.member_ticks) {
      auto it = prev->member_ticks.find(pid);
      if (it != prev->member_ticks.end()) ticks += SatSub(t, it->second);
    }
    out->process_cpu_percent =
        100.0 * static_cast<double>(ticks) / static_cast<double>(ticks_per_s) / secs;
    uint64_t wait_ns = 0;
    bool any_wait = false;
    for (const auto& [pid, w] : cur.member_wait_ns) {
      auto it = prev->member_wait_ns.find(pid);
      if (it == prev->member_wait_ns.end()) continue;
      wait_ns += SatSub(w, it->second);
      any_wait = true;
    }
    if (any_wait) out->process_cpu_wait_percent = 100.0 * static_cast<double>(wait_ns) / 1e9 / secs;
  }
  if (cur.disk && prev->disk) {
    auto r = Delta(cur.disk->read_bytes, prev->disk->read_bytes);
    auto w = Delta(cur.disk->write_bytes, prev->disk->write_bytes);
    if (r) out->disk_read_bytes_per_s = static_cast<double>(*r) / secs;
    if (w) out->disk_write_bytes_per_s = static_cast<double>(*w) / secs;
  }
  if (cur.net && prev->net) {
    auto rx = Delta(cur.net->rx_bytes, prev->net->rx_bytes);
    auto tx = Delta(cur.net->tx_bytes, prev->net->tx_bytes);
    if (rx) out->net_rx_bytes_per_s = static_cast<double>(*rx) / secs;
    if (tx) out->net_tx_bytes_per_s = static_cast<double>(*tx) / secs;
  }
  if (cur.cgroup_cpu_usage_usec && prev->cgroup_cpu_usage_usec) {
    auto d = Delta(*cur.cgroup_cpu_usage_usec, *prev->cgroup_cpu_usage_usec);
    if (d) out->cgroup_cpu_percent = 100.0 * static_cast<double>(*d) / (secs * 1e6);
  }
}

}  // namespace trainscope::proc
