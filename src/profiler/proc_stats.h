// Parsers for the /proc and cgroup-v2 files the system sampler reads, and ProcReader, which keeps
// those files open and re-reads them with pread (a /proc file regenerates its content on every
// read from offset 0). Private to src/profiler.
//
// Thread safety: the parsers are pure functions; a ProcReader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace trainscope::proc {

// Jiffies of one line of /proc/stat ("cpu" or "cpuN").
struct CpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  uint64_t Total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
  // Time not idle and not waiting for I/O.
  uint64_t Busy() const { return Total() - idle - iowait; }
};

struct CpuStat {
  CpuTimes total;
  std::vector<CpuTimes> cores;  // by core number (a missing, offline core stays zero)
};
bool ParseProcStat(std::string_view text, CpuStat* out);

struct MemInfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;  // MemAvailable, else MemFree + Buffers + Cached
};
bool ParseMemInfo(std::string_view text, MemInfo* out);

// Sums over whole disks only: names starting loop, ram, zram, dm-, md, sr, fd, nbd are skipped
// (virtual or stacked: their I/O is also counted on the disks beneath), and so is any partition
// (a name that is another listed device plus digits, or plus "p" and digits).
struct DiskTotals {
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
};
bool ParseDiskStats(std::string_view text, DiskTotals* out);

// Sums every interface but "lo".
struct NetTotals {
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
};
bool ParseNetDev(std::string_view text, NetTotals* out);

// /proc/<pid>/stat. The command name may hold spaces and ')', so fields are counted after the
// last ')'.
struct PidStat {
  int pid = 0;
  int ppid = 0;
  uint64_t cpu_ticks = 0;  // utime + stime
  int64_t rss_pages = 0;
};
bool ParsePidStat(std::string_view text, PidStat* out);
// /proc/<pid>/schedstat "<on-cpu ns> <run_delay ns> <timeslices>": the run_delay, the time the
// task was ready to run but waited for a CPU.
std::optional<uint64_t> ParseSchedstatRunDelay(std::string_view text);

// cgroup v2 files. "max" yields nullopt.
std::optional<uint64_t> ParseCgroupMemoryMax(std::string_view text);
// cpu.max "<quota> <period>" -> quota/period cores; "max ..." -> nullopt.
std::optional<double> ParseCgroupCpuMax(std::string_view text);
// cpu.stat "usage_usec N".
std::optional<uint64_t> ParseCgroupCpuUsageUsec(std::string_view text);
// /proc/self/cgroup: the path of the "0::<path>" line (cgroup v2), if any.
std::optional<std::string> ParseCgroupV2Path(std::string_view text);

// The counters of one instant.
struct RawSnapshot {
  uint64_t timestamp_us = 0;
  std::optional<CpuStat> cpu;
  std::optional<MemInfo> mem;
  std::optional<DiskTotals> disk;
  std::optional<NetTotals> net;
  // Process tree: members found and the sum of their CPU ticks and RSS pages.
  std::optional<int> process_count;
  uint64_t process_cpu_ticks = 0;
  int64_t process_rss_pages = 0;
  // Per member pid -> ticks, so a member that exits between snapshots is not counted as negative.
  std::unordered_map<int, uint64_t> member_ticks;
  // Per member pid -> run_delay ns of its main thread (absent without schedstat).
  std::unordered_map<int, uint64_t> member_wait_ns;
  std::optional<uint64_t> cgroup_memory_max;  // nullopt also when "max"
  bool cgroup_memory_max_present = false;     // the file exists (value may be "max")
  std::optional<uint64_t> cgroup_memory_current;
  std::optional<double> cgroup_cpu_limit_cores;
  std::optional<uint64_t> cgroup_cpu_usage_usec;
};

// Reads the counters. Files are opened on first use and kept open; a file that does not exist
// is remembered as absent and not retried (except per-process files, which come and go).
class ProcReader {
 public:
  ProcReader(std::string proc_root, std::string cgroup_root, int root_pid,
             int64_t rescan_interval_us);
  ~ProcReader();
  ProcReader(const ProcReader&) = delete;
  ProcReader& operator=(const ProcReader&) = delete;

  void Read(uint64_t now_us, RawSnapshot* out);
  // Which sources were found (for a one-time report).
  std::string DescribeSources() const;
  int64_t clock_ticks_per_second() const { return ticks_per_s_; }
  int64_t page_size() const { return page_size_; }

 private:
  struct KeptFile {
    int fd = -1;
    bool absent = false;  // open failed once; not retried
  };
  // Reads the whole of `path` into buf_ through the kept-open fd. False when absent/failed.
  bool ReadKept(KeptFile* f, const std::string& path);
  bool ReadPidStat(int pid, PidStat* out);
  void ScanProcessTree();
  void ReadProcessTree(uint64_t now_us, RawSnapshot* out);
  void ResolveCgroupDir();

  std::string proc_root_;
  std::string cgroup_root_;
  std::string cgroup_dir_;  // resolved from /proc/self/cgroup on first Read
  bool cgroup_resolved_ = false;
  int root_pid_;
  int64_t rescan_interval_us_;
  uint64_t last_scan_us_ = 0;
  bool scanned_ = false;
  bool schedstat_absent_ = false;  // the kernel has no /proc/<pid>/schedstat
  int64_t ticks_per_s_;
  int64_t page_size_;

  KeptFile stat_, meminfo_, diskstats_, netdev_;
  KeptFile cg_mem_max_, cg_mem_cur_, cg_cpu_max_, cg_cpu_stat_;
  std::string stat_path_, meminfo_path_, diskstats_path_, netdev_path_;
  std::string cg_mem_max_path_, cg_mem_cur_path_, cg_cpu_max_path_, cg_cpu_stat_path_;
  std::unordered_map<int, int> member_fds_;  // pid -> fd of /proc/<pid>/stat
  std::unordered_map<int, int> known_ppid_;  // every listed pid -> its parent, from the last scan
  std::string buf_;
  std::string scan_buf_ = std::string(4096, '\0');
  size_t buf_len_ = 0;
};

}  // namespace trainscope::proc
