// AppendSystemMetricLines: one SystemSample as smdebug system-metrics JSON lines
// (docs/formats/system_metrics.md).
#include <cmath>

#include "profiler/json_write.h"
#include "trainscope/system_sampler.h"

namespace trainscope {
namespace {

namespace pf = profiler_format;

class LineWriter {
 public:
  LineWriter(std::string_view node_id, uint64_t ts_us, std::string* out)
      : node_id_(node_id), out_(out) {
    ts_.reserve(24);
    json_write::EpochSeconds(&ts_, ts_us);
  }
  void Add(std::string_view type, std::string_view name, std::string_view dim, double value) {
    if (!std::isfinite(value)) return;
    out_->append("{\"Type\":");
    json_write::String(out_, type);
    out_->append(",\"Name\":");
    json_write::String(out_, name);
    out_->append(",\"Dimension\":");
    json_write::String(out_, dim);
    out_->append(",\"Value\":");
    json_write::Double(out_, value);
    out_->append(",\"NodeId\":");
    json_write::String(out_, node_id_);
    out_->append(",\"Timestamp\":");
    out_->append(ts_);
    out_->append("}\n");
    ++count_;
  }
  int count() const { return count_; }
  template <typename T>
  void Add(std::string_view type, std::string_view name, std::string_view dim,
           const std::optional<T>& v) {
    if (v) Add(type, name, dim, static_cast<double>(*v));
  }

 private:
  std::string_view node_id_;
  std::string* out_;
  std::string ts_;
  int count_ = 0;
};

// "cpu12" / "gpu3" without allocating beyond the small-string buffer.
std::string Indexed(std::string_view prefix, size_t i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}

}  // namespace

int AppendSystemMetricLines(const SystemSample& s, std::string_view node_id, std::string* out) {
  LineWriter w(node_id, s.timestamp_us, out);
  if (s.has_rates && !s.cpu_core_percent.empty()) {
    for (size_t i = 0; i < s.cpu_core_percent.size(); ++i) {
      w.Add(pf::kTypeCpu, Indexed("cpu", i), pf::kDimCpuUtilization, s.cpu_core_percent[i]);
    }
    for (size_t i = 0; i < s.iowait_core_percent.size(); ++i) {
      w.Add(pf::kTypeCpu, Indexed("cpu", i), pf::kDimIoWaitPercentage, s.iowait_core_percent[i]);
    }
    w.Add(pf::kTypeCpu, pf::kNameCpuTotal, pf::kDimCpuUtilizationTotal, s.cpu_total_percent);
    w.Add(pf::kTypeCpu, pf::kNameCpuTotal, pf::kDimIoWaitPercentageTotal, s.iowait_total_percent);
  }
  w.Add(pf::kTypeMemory, pf::kMemoryUsedPercent, pf::kMemoryUsedPercent, s.memory_used_percent);
  w.Add(pf::kTypeMemory, pf::kNameMemory, pf::kDimMemoryUsedBytes, s.memory_used_bytes);
  w.Add(pf::kTypeMemory, pf::kNameMemory, pf::kDimMemoryTotalBytes, s.memory_total_bytes);
  if (s.process_count) {
    w.Add(pf::kTypeProcess, pf::kNameProcessTree, pf::kDimProcessTreeCount, s.process_count);
    w.Add(pf::kTypeProcess, pf::kNameProcessTree, pf::kDimProcessTreeRss, s.process_rss_bytes);
    w.Add(pf::kTypeProcess, pf::kNameProcessTree, pf::kDimProcessTreeCpu, s.process_cpu_percent);
    w.Add(pf::kTypeProcess, pf::kNameProcessTree, pf::kDimProcessTreeCpuWait,
          s.process_cpu_wait_percent);
  }
  w.Add(pf::kTypeDisk, pf::kNameDisk, pf::kDimDiskReadRate, s.disk_read_bytes_per_s);
  w.Add(pf::kTypeDisk, pf::kNameDisk, pf::kDimDiskWriteRate, s.disk_write_bytes_per_s);
  w.Add(pf::kTypeNetwork, pf::kNameNetwork, pf::kDimNetworkRxRate, s.net_rx_bytes_per_s);
  w.Add(pf::kTypeNetwork, pf::kNameNetwork, pf::kDimNetworkTxRate, s.net_tx_bytes_per_s);
  w.Add(pf::kTypeCgroup, pf::kNameCgroup, pf::kDimCgroupMemoryMax, s.cgroup_memory_max_bytes);
  w.Add(pf::kTypeCgroup, pf::kNameCgroup, pf::kDimCgroupMemoryCurrent,
        s.cgroup_memory_current_bytes);
  w.Add(pf::kTypeCgroup, pf::kNameCgroup, pf::kDimCgroupCpuLimit, s.cgroup_cpu_limit_cores);
  w.Add(pf::kTypeCgroup, pf::kNameCgroup, pf::kDimCgroupCpu, s.cgroup_cpu_percent);
  for (const GpuMetrics& g : s.gpus) {
    std::string name = Indexed("gpu", static_cast<size_t>(g.index));
    w.Add(pf::kTypeGpu, name, pf::kDimGpuUtilization, g.utilization_percent);
    if (g.memory_used_bytes && g.memory_total_bytes && *g.memory_total_bytes > 0) {
      w.Add(pf::kTypeGpu, name, pf::kDimGpuMemoryUtilization,
            100.0 * static_cast<double>(*g.memory_used_bytes) /
                static_cast<double>(*g.memory_total_bytes));
    }
    w.Add(pf::kTypeGpu, name, pf::kDimGpuMemoryUsedBytes, g.memory_used_bytes);
    w.Add(pf::kTypeGpu, name, pf::kDimGpuMemoryTotalBytes, g.memory_total_bytes);
    w.Add(pf::kTypeGpu, name, pf::kDimGpuMemoryBandwidth, g.memory_bandwidth_percent);
    w.Add(pf::kTypeGpu, name, pf::kDimGpuTemperature, g.temperature_celsius);
    w.Add(pf::kTypeGpu, name, pf::kDimGpuPower, g.power_watts);
    w.Add(pf::kTypeGpu, name, pf::kDimGpuSmClock, g.sm_clock_mhz);
    w.Add(pf::kTypeGpu, name, pf::kDimGpuMemClock, g.memory_clock_mhz);
  }
  return w.count();
}

}  // namespace trainscope
