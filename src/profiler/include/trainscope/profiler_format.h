// Constants and path rules of the profiler's on-disk layout (docs/formats/system_metrics.md and
// docs/formats/timeline.md): smdebug's system/ and framework/ folders. One header holds every
// constant of both formats; writers and readers use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainscope::profiler_format {

// ---- System metrics: <base>/system/incremental/<YYYYMMDDHH>/<minute epoch s>.algo-<n>.json ----
inline constexpr std::string_view kSystemDir = "system";
inline constexpr std::string_view kSystemIncrementalDir = "system/incremental";
inline constexpr std::string_view kNodePrefix = "algo-";  // NodeId of node n is "algo-<n>"
inline constexpr int64_t kSystemFileSeconds = 60;         // one file per UTC minute

// Sampling interval (ms): smdebug's SageMaker agent offers 100..60000 ms.
inline constexpr int64_t kDefaultSystemIntervalMillis = 500;
inline constexpr int64_t kMinSystemIntervalMillis = 100;
inline constexpr int64_t kMaxSystemIntervalMillis = 60000;

// JSON keys of one system-metrics line.
inline constexpr std::string_view kKeyType = "Type";
inline constexpr std::string_view kKeyName = "Name";
inline constexpr std::string_view kKeyDimension = "Dimension";
inline constexpr std::string_view kKeyValue = "Value";
inline constexpr std::string_view kKeyNodeId = "NodeId";
inline constexpr std::string_view kKeyTimestamp = "Timestamp";

// "Type" values.
inline constexpr std::string_view kTypeCpu = "cpu";
inline constexpr std::string_view kTypeGpu = "gpu";
inline constexpr std::string_view kTypeMemory = "memory";
inline constexpr std::string_view kTypeProcess = "process";
inline constexpr std::string_view kTypeDisk = "disk";
inline constexpr std::string_view kTypeNetwork = "network";
inline constexpr std::string_view kTypeCgroup = "cgroup";

// "Dimension" values that smdebug's rules read (Name: cpu<i> / gpu<i> / MemoryUsedPercent).
inline constexpr std::string_view kDimCpuUtilization = "CPUUtilization";              // %, per core
inline constexpr std::string_view kDimIoWaitPercentage = "I/OWaitPercentage";         // %, per core
inline constexpr std::string_view kDimGpuUtilization = "GPUUtilization";              // %, per GPU
inline constexpr std::string_view kDimGpuMemoryUtilization = "GPUMemoryUtilization";  // % used
inline constexpr std::string_view kMemoryUsedPercent = "MemoryUsedPercent";  // Name and Dim
// Our extra dimensions (docs/formats/system_metrics.md lists each with its unit).
inline constexpr std::string_view kDimCpuUtilizationTotal = "CPUUtilizationTotal";       // %
inline constexpr std::string_view kDimIoWaitPercentageTotal = "I/OWaitPercentageTotal";  // %
inline constexpr std::string_view kDimMemoryUsedBytes = "MemoryUsedBytes";
inline constexpr std::string_view kDimMemoryTotalBytes = "MemoryTotalBytes";
inline constexpr std::string_view kDimProcessTreeCpu = "ProcessTreeCPUUtilization";  // % of a core
inline constexpr std::string_view kDimProcessTreeRss = "ProcessTreeResidentBytes";
// % of the interval the members' main threads waited, ready, for a CPU (/proc/<pid>/schedstat).
inline constexpr std::string_view kDimProcessTreeCpuWait = "ProcessTreeCPUWaitPercent";
inline constexpr std::string_view kDimProcessTreeCount = "ProcessTreeProcessCount";
inline constexpr std::string_view kDimDiskReadRate = "DiskReadBytesPerSecond";
inline constexpr std::string_view kDimDiskWriteRate = "DiskWriteBytesPerSecond";
inline constexpr std::string_view kDimNetworkRxRate = "NetworkRxBytesPerSecond";
inline constexpr std::string_view kDimNetworkTxRate = "NetworkTxBytesPerSecond";
inline constexpr std::string_view kDimCgroupMemoryMax = "CgroupMemoryMaxBytes";
inline constexpr std::string_view kDimCgroupMemoryCurrent = "CgroupMemoryCurrentBytes";
inline constexpr std::string_view kDimCgroupCpuLimit = "CgroupCPULimitCores";
inline constexpr std::string_view kDimCgroupCpu = "CgroupCPUUtilization";  // % of one core
inline constexpr std::string_view kDimGpuMemoryUsedBytes = "GPUMemoryUsedBytes";
inline constexpr std::string_view kDimGpuMemoryTotalBytes = "GPUMemoryTotalBytes";
inline constexpr std::string_view kDimGpuMemoryBandwidth = "GPUMemoryBandwidthUtilization";  // %
inline constexpr std::string_view kDimGpuTemperature = "GPUTemperatureCelsius";
inline constexpr std::string_view kDimGpuPower = "GPUPowerWatts";
inline constexpr std::string_view kDimGpuSmClock = "GPUSMClockMHz";
inline constexpr std::string_view kDimGpuMemClock = "GPUMemoryClockMHz";
// "Name" values of the aggregate series.
inline constexpr std::string_view kNameCpuTotal = "cpu";
inline constexpr std::string_view kNameProcessTree = "process_tree";
inline constexpr std::string_view kNameDisk = "disk";
inline constexpr std::string_view kNameNetwork = "network";
inline constexpr std::string_view kNameCgroup = "cgroup";
inline constexpr std::string_view kNameMemory = "memory";

// ---- Framework timeline: <base>/framework/pevents/<YYYYMMDDHH>/<end_us>_<node>_<suffix> ----
inline constexpr std::string_view kFrameworkDir = "framework";
inline constexpr std::string_view kFrameworkEventsDir = "framework/pevents";
inline constexpr std::string_view kPythonTimelineSuffix = "pythontimeline.json";
inline constexpr std::string_view kModelTimelineSuffix = "model_timeline.json";
inline constexpr std::string_view kHorovodTimelineSuffix = "horovod_timeline.json";
inline constexpr std::string_view kSmDataParallelTimelineSuffix = "smdataparallel_timeline.json";
inline constexpr std::string_view kMergedTimelineSuffix = "merged_timeline.json";
inline constexpr std::string_view kTmpSuffix = ".tmp";
// torch.profiler Chrome traces (operator level) live under this folder, any depth.
inline constexpr std::string_view kPytorchDetailedProfilingDir =
    "framework/pytorch/detailed_profiling";
// Readers do not read a profiler file (system metrics, timeline, torch.profiler trace) or a rule's
// events.jsonl larger than this: it is skipped, reported as a problem naming the file and its size
// (system_metrics.md, framework_profiling.md, timeline.md). Far above what the writers make
// (timeline files rotate at 10 MiB; a system file holds one minute).
inline constexpr uint64_t kMaxReadFileBytes = uint64_t{256} << 20;

// Rotation (smdebug's ProfilingParameters defaults).
inline constexpr uint64_t kDefaultRotateMaxFileSizeBytes = 10485760;  // 10 MiB
inline constexpr int64_t kDefaultRotateFileCloseIntervalSeconds = 60;
inline constexpr int64_t kDefaultFileOpenFailThreshold = 50;

// First metadata record of every timeline file carries the time origin of its "ts" values.
inline constexpr std::string_view kStartTimeArg = "start_time_since_epoch_in_micros";
// Event argument that carries the training step ("3" as smdebug writes it, or 3).
inline constexpr std::string_view kStepArg = "step_num";

// Profiler config: TRAINSCOPE_PROFILER_CONFIG, else SMPROFILER_CONFIG_PATH.
inline constexpr std::string_view kProfilerConfigEnv = "TRAINSCOPE_PROFILER_CONFIG";
inline constexpr std::string_view kSmProfilerConfigEnv = "SMPROFILER_CONFIG_PATH";

// ---- Path helpers (all times UTC) ----

// "2024010112" for an epoch second.
std::string HourFolderName(int64_t epoch_seconds);
// "algo-1" for node 1.
std::string NodeIdForIndex(int node_index);
// "system/incremental/2024010112/1704110400.algo-1.json" (relative to the base folder) for the
// minute holding `epoch_seconds`.
std::string SystemMetricsFilePath(int64_t epoch_seconds, int node_index);
// "framework/pevents/2024010112/1704110412345678_<node>_<suffix>" (relative) for a file whose
// last event ends at `end_us`.
std::string TimelineFilePath(int64_t end_us, std::string_view node_id, std::string_view suffix);
// smdebug's node id for a process: "<pid>-<hostname>" with every '_' turned into '-' (a '_'
// separates the fields of a timeline file name).
std::string DefaultTimelineNodeId();

struct SystemFileName {
  int64_t minute_epoch_seconds;
  std::string node_id;  // "algo-1"
};
// Parses "1704110400.algo-1.json"; nullopt for anything else.
std::optional<SystemFileName> ParseSystemFileName(std::string_view basename);

struct TimelineFileName {
  int64_t end_us;
  std::string node_id;
  std::string suffix;  // "pythontimeline.json"
};
// Parses "<end_us>_<node>_<suffix>.json"; nullopt for anything else (".tmp" included).
std::optional<TimelineFileName> ParseTimelineFileName(std::string_view basename);

}  // namespace trainscope::profiler_format
