// SystemSampler: samples the machine every interval (CPU per core, I/O wait, memory, the training
// process tree, disk and network rates, cgroup v2 limits, GPUs) and appends the samples to
// smdebug's system-metrics layout under <base>/system/incremental/
// (docs/formats/system_metrics.md).
//
// It reads /proc and /sys/fs/cgroup directly (kept-open files read with pread); both roots can be
// moved so tests feed fixture folders. Output goes through Env. The sampler fails open: a file it
// cannot read leaves that metric out, a write error is reported once and sampling goes on; it
// never stops or slows the training it observes.
//
// Thread safety: Start, Stop, SampleNow and Latest may be called from any thread; they serialise on
// an internal mutex. The sampler's own thread does the periodic work.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/gpu_source.h"
#include "trainscope/profiler_format.h"
#include "trainscope/status.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

struct SystemSamplerOptions {
  // Sampling interval, 100..60000 ms (profiler config key "system_monitor_interval_millis").
  int64_t interval_millis = profiler_format::kDefaultSystemIntervalMillis;
  // NodeId "algo-<node_index>" in every record and file name.
  int node_index = 1;
  // Root of the training process tree whose CPU and memory are reported; <= 0: none.
  int root_pid = 0;
  // How often the process tree is re-discovered by scanning <proc>/*/stat (new data-loader
  // workers appear at most this late). Between scans only the known members are read.
  int64_t process_rescan_millis = 2000;
  // Roots of the proc and cgroup-v2 file systems (fixture folders in tests).
  std::string proc_root = "/proc";
  std::string cgroup_root = "/sys/fs/cgroup";
  // GPU metrics source. Null: try NvmlGpuSource::Open(); when that fails its message is reported
  // once and GPU metrics are off.
  std::shared_ptr<GpuSource> gpu_source;
  // Set to skip NVML entirely (no GPU metrics) when gpu_source is null.
  bool disable_gpu = false;
  // Epoch microseconds of "now" (tests inject a clock). Default: Env::NowMicros().
  std::function<uint64_t()> clock;
  // Where one-time reports go (a write error, "no NVIDIA GPU found ..."). Default: stderr,
  // prefixed "trainscope: ".
  std::function<void(std::string_view)> report;
  // Write samples to files (off: only Latest()/SampleNow() results, e.g. for a dashboard).
  bool write_files = true;
};

// One sample. Rates (CPU %, disk and network bytes/s, process CPU %) need two snapshots, so the
// first sample after Start has has_rates == false and holds only the levels.
struct SystemSample {
  uint64_t timestamp_us = 0;  // epoch
  bool has_rates = false;
  double interval_seconds = 0;  // since the previous snapshot (0 for the first)

  std::vector<double> cpu_core_percent;     // index = core
  std::vector<double> iowait_core_percent;  // index = core
  double cpu_total_percent = 0;
  double iowait_total_percent = 0;

  std::optional<uint64_t> memory_total_bytes;
  std::optional<uint64_t> memory_used_bytes;  // MemTotal - MemAvailable
  std::optional<double> memory_used_percent;

  // Training process tree (root_pid and its descendants).
  std::optional<int> process_count;
  std::optional<double> process_cpu_percent;  // % of one core: 250 = two and a half cores busy
  std::optional<uint64_t> process_rss_bytes;  // sum of members' resident sets
  // % of the interval the members' main threads were ready to run but waited for a CPU (summed).
  std::optional<double> process_cpu_wait_percent;

  std::optional<double> disk_read_bytes_per_s;  // whole disks (partitions, loop, dm, md skipped)
  std::optional<double> disk_write_bytes_per_s;
  std::optional<double> net_rx_bytes_per_s;  // every interface but "lo"
  std::optional<double> net_tx_bytes_per_s;

  // cgroup v2 of this process, where present.
  std::optional<uint64_t> cgroup_memory_max_bytes;  // absent when "max" (no limit)
  std::optional<uint64_t> cgroup_memory_current_bytes;
  std::optional<double> cgroup_cpu_limit_cores;  // cpu.max quota/period; absent when "max"
  std::optional<double> cgroup_cpu_percent;      // from cpu.stat usage_usec, % of one core

  std::vector<GpuMetrics> gpus;
};

// Appends the JSON lines of `sample` (docs/formats/system_metrics.md) to *out; returns how many.
int AppendSystemMetricLines(const SystemSample& sample, std::string_view node_id, std::string* out);

class SystemSampler {
 public:
  // Validates options (interval out of range -> InvalidArgument naming the allowed range).
  // `env` is not owned and must outlive the sampler; files go under <base_dir>/system/.
  static Result<std::unique_ptr<SystemSampler>> Create(Env* env, std::string base_dir,
                                                       SystemSamplerOptions options);
  ~SystemSampler();  // Stop()
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  // Starts the sampling thread (takes the first snapshot at once). Idempotent.
  Status Start();
  // Stops and joins the thread, closes the current file. Idempotent.
  void Stop();
  bool running() const { return running_.load(); }

  // Takes one sample now (on the calling thread), writes it like the thread does, returns it.
  // Usable without Start (tests, a caller with its own schedule).
  SystemSample SampleNow();
  // The most recent sample, if any.
  std::optional<SystemSample> Latest() const;

  // Samples taken and records written so far; one-time reports made so far.
  int64_t samples_taken() const { return samples_.load(); }
  int64_t records_written() const { return records_.load(); }
  std::vector<std::string> reports() const;
  // The GPU source's description, or why GPU metrics are off.
  std::string gpu_status() const;
  const SystemSamplerOptions& options() const { return options_; }

 private:
  class Impl;
  SystemSampler(Env* env, std::string base_dir, SystemSamplerOptions options);
  void Run() TS_EXCLUDES(run_mu_);

  SystemSamplerOptions options_;
  mutable Mutex mu_;
  std::unique_ptr<Impl> impl_ TS_PT_GUARDED_BY(mu_);
  std::optional<SystemSample> latest_ TS_GUARDED_BY(mu_);
  Mutex run_mu_;  // guards stop_ and the thread
  CondVar cv_;
  bool stop_ TS_GUARDED_BY(run_mu_) = false;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<int64_t> samples_{0};
  std::atomic<int64_t> records_{0};
};

}  // namespace trainscope
