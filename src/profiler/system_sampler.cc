#include "trainscope/system_sampler.h"

#include <pthread.h>

#include <cstdio>
#include <set>

#include "profiler/minute_file_writer.h"
#include "profiler/proc_stats.h"
#include "profiler/sample_compute.h"

namespace trainscope {
namespace pf = profiler_format;

class SystemSampler::Impl {
 public:
  Impl(Env* env, std::string base_dir, const SystemSamplerOptions& o)
      : env(env),
        reader(o.proc_root, o.cgroup_root, o.root_pid, o.process_rescan_millis * 1000),
        writer(env, std::move(base_dir), o.node_index),
        node_id(pf::NodeIdForIndex(o.node_index)) {}

  Env* env;
  proc::ProcReader reader;
  MinuteFileWriter writer;
  std::string node_id;
  std::shared_ptr<GpuSource> gpu;
  std::string gpu_status;
  proc::RawSnapshot prev, cur;
  bool has_prev = false;
  std::string lines;  // reused between samples
  std::set<std::string> reported_keys;
  std::vector<std::string> reports;
};

namespace {

void ReportToStderr(std::string_view msg) {
  std::fprintf(stderr, "trainscope: %.*s\n", static_cast<int>(msg.size()), msg.data());
}

}  // namespace

Result<std::unique_ptr<SystemSampler>> SystemSampler::Create(Env* env, std::string base_dir,
                                                             SystemSamplerOptions options) {
  if (options.interval_millis < pf::kMinSystemIntervalMillis ||
      options.interval_millis > pf::kMaxSystemIntervalMillis) {
    return Status::InvalidArgument(
        "system_monitor_interval_millis=" + std::to_string(options.interval_millis) +
        " is out of range: allowed " + std::to_string(pf::kMinSystemIntervalMillis) + " to " +
        std::to_string(pf::kMaxSystemIntervalMillis) + " ms");
  }
  if (options.node_index < 0) {
    return Status::InvalidArgument("node_index=" + std::to_string(options.node_index) +
                                   " must be >= 0 (NodeId is algo-<node_index>)");
  }
  if (options.process_rescan_millis < 0) options.process_rescan_millis = 0;
  if (env == nullptr) env = Env::Default();
  return std::unique_ptr<SystemSampler>(
      new SystemSampler(env, std::move(base_dir), std::move(options)));
}

SystemSampler::SystemSampler(Env* env, std::string base_dir, SystemSamplerOptions options)
    : options_(std::move(options)),
      impl_(std::make_unique<Impl>(env, std::move(base_dir), options_)) {
  if (!options_.clock) options_.clock = [env] { return env->NowMicros(); };
  const bool default_sink = !options_.report;
  if (default_sink) options_.report = ReportToStderr;
  if (options_.gpu_source) {
    impl_->gpu = options_.gpu_source;
    impl_->gpu_status = impl_->gpu->Describe();
  } else if (options_.disable_gpu) {
    impl_->gpu_status = "GPU metrics disabled";
  } else {
    auto nvml = NvmlGpuSource::Open();
    if (nvml.ok()) {
      impl_->gpu = std::move(nvml).value();
      impl_->gpu_status = impl_->gpu->Describe();
    } else {
      impl_->gpu_status = nvml.status().message();
      // Said once per process on stderr (many samplers may be created); kept per sampler.
      static std::atomic<bool> said{false};
      impl_->reports.push_back(impl_->gpu_status);
      impl_->reported_keys.insert("gpu-open");
      if (!default_sink || !said.exchange(true)) options_.report(impl_->gpu_status);
    }
  }
}

SystemSampler::~SystemSampler() { Stop(); }

Status SystemSampler::Start() {
  MutexLock lock(&run_mu_);
  if (running_.load()) return Status::OK();
  stop_ = false;
  running_.store(true);
  thread_ = std::thread([this] { Run(); });
  return Status::OK();
}

void SystemSampler::Stop() {
  {
    MutexLock lock(&run_mu_);
    if (!running_.load()) return;
    stop_ = true;
  }
  cv_.SignalAll();
  thread_.join();
  running_.store(false);
  MutexLock lock(&mu_);
  Status s = impl_->writer.Close();
  if (!s.ok() && impl_->reported_keys.insert("close").second) {
    impl_->reports.push_back("system metrics: " + s.ToString());
    options_.report(impl_->reports.back());
  }
}

void SystemSampler::Run() {
  // Named so that `top -H` and bench/run_cost.py can tell the sampler's CPU from its host's.
  pthread_setname_np(pthread_self(), "ts-sampler");
  const auto interval = std::chrono::milliseconds(options_.interval_millis);
  auto next = std::chrono::steady_clock::now();
  UniqueMutexLock lock(&run_mu_);
  while (!stop_) {
    lock.Unlock();
    SampleNow();
    lock.Lock();
    next += interval;
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;  // overslept (a suspended machine): do not catch up in a burst
    while (!stop_ && cv_.WaitUntil(&run_mu_, next)) {
    }
  }
}

SystemSample SystemSampler::SampleNow() {
  MutexLock lock(&mu_);
  Impl& m = *impl_;
  auto report_once = [&](const std::string& key, const std::string& msg) {
    if (!m.reported_keys.insert(key).second) return;
    m.reports.push_back(msg);
    options_.report(msg);
  };

  m.reader.Read(options_.clock(), &m.cur);
  SystemSample sample;
  if (m.gpu) {
    Status s = m.gpu->Sample(&sample.gpus);
    if (!s.ok()) {
      sample.gpus.clear();
      report_once("gpu-sample", "GPU metrics: " + s.ToString() + " (sampling goes on)");
    }
  }
  proc::ComputeSample(m.has_prev ? &m.prev : nullptr, m.cur, m.reader.clock_ticks_per_second(),
                      m.reader.page_size(), &sample);
  if (!m.has_prev && !m.cur.cpu) {
    report_once("no-stat", "system metrics: cannot read " + options_.proc_root +
                               "/stat: CPU metrics off (" + m.reader.DescribeSources() + ")");
  }
  std::swap(m.prev, m.cur);
  m.has_prev = true;

  if (options_.write_files) {
    m.lines.clear();
    int n = AppendSystemMetricLines(sample, m.node_id, &m.lines);
    Status s = m.writer.Append(sample.timestamp_us, m.lines);
    if (s.ok()) {
      records_.fetch_add(n);
    } else {
      report_once("write", "system metrics: " + s.ToString() +
                               " (reported once; sampling goes on and retries)");
    }
  }
  samples_.fetch_add(1);
  latest_ = sample;
  return sample;
}

std::optional<SystemSample> SystemSampler::Latest() const {
  MutexLock lock(&mu_);
  return latest_;
}

std::vector<std::string> SystemSampler::reports() const {
  MutexLock lock(&mu_);
  return impl_->reports;
}

std::string SystemSampler::gpu_status() const {
  MutexLock lock(&mu_);
  return impl_->gpu_status;
}

}  // namespace trainscope
