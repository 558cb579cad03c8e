// Every parser of the profiler fed mutated real inputs (flipped, inserted, deleted bytes; cut
// files): no crash (run under ASan/UBSan too), and what comes out is well formed.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "profiler/proc_stats.h"
#include "profiler_test_util.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/profiler_config.h"
#include "trainscope/trace_merge.h"

namespace trainscope {
namespace {

std::string Mutate(std::string s, std::mt19937* rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  int edits = 1 + static_cast<int>((*rng)() % 8);
  for (int i = 0; i < edits && !s.empty(); ++i) {
    size_t at = (*rng)() % s.size();
    switch ((*rng)() % 5) {
      case 0:
        s[at] = static_cast<char>(byte(*rng));
        break;
      case 1:
        s.insert(at, 1, static_cast<char>(byte(*rng)));
        break;
      case 2:
        s.erase(at, 1 + (*rng)() % 16);
        break;
      case 3:
        s.resize(at);
        break;
      default:
        s.insert(at, std::string("{}[],:\"\n").substr((*rng)() % 8, 1));
        break;
    }
  }
  return s;
}

TEST(ParserRobustnessTest, MutatedInputsNeverCrashAndYieldWellFormedRecords) {
  const std::string data = test_util::ProfilerDataDir();
  const std::string timeline = test_util::ReadAll(data +
                                                  "/smdebug_trial/framework/pevents/2026112122/"
                                                  "1795301745964013_4092-vm_pythontimeline.json");
  const std::string system = test_util::ReadAll(
      data + "/smdebug_trial/system/incremental/2026112122/1795301700.algo-1.json");
  const std::string torch = test_util::ReadAll(data + "/torch_trace/worker0.pt.trace.json");
  const std::string stat = test_util::ReadAll(data + "/snap1/proc/stat");
  const std::string pid_stat = test_util::ReadAll(data + "/snap1/proc/4242/stat");
  const std::string diskstats = test_util::ReadAll(data + "/snap1/proc/diskstats");
  const std::string netdev = test_util::ReadAll(data + "/snap1/proc/net/dev");
  const std::string meminfo = test_util::ReadAll(data + "/snap1/proc/meminfo");
  const std::string config = R"({"ProfilingParameters": {"LocalPath": "/x",
      "DetailedProfilingConfig": "{\"StartStep\": 2, \"NumSteps\": 3}",
      "SystemMonitorIntervalMillis": 500}})";
  ASSERT_FALSE(timeline.empty() || system.empty() || torch.empty() || stat.empty());

  std::mt19937 rng(20240101);
  for (int round = 0; round < 600; ++round) {
    ReaderStats st;
    for (const TimelineEvent& e :
         TimelineReader::ParseFile(Mutate(timeline, &rng), "n", "pythontimeline.json", "t", &st)) {
      EXPECT_GE(e.dur_us, 0);
      EXPECT_TRUE(e.ph == 'X' || e.ph == 'i');
    }
    for (const TimelineEvent& e :
         TimelineReader::ParseFile(Mutate(torch, &rng), "n", "trace.json", "t", &st)) {
      EXPECT_GE(e.dur_us, 0);
    }
    for (const SystemMetricEvent& e :
         SystemMetricsReader::ParseFile(Mutate(system, &rng), "s", &st)) {
      EXPECT_TRUE(std::isfinite(e.value));
      EXPECT_FALSE(e.type.empty() && e.dimension.empty());
    }
    (void)ValidateTraceEvents(Mutate(torch, &rng));
    (void)ParseProfilerConfig(Mutate(config, &rng));
    proc::CpuStat cpu;
    if (proc::ParseProcStat(Mutate(stat, &rng), &cpu)) {
      EXPECT_LE(cpu.cores.size(), 65536u);
    }
    proc::PidStat p;
    (void)proc::ParsePidStat(Mutate(pid_stat, &rng), &p);
    proc::DiskTotals d;
    (void)proc::ParseDiskStats(Mutate(diskstats, &rng), &d);
    proc::NetTotals n;
    (void)proc::ParseNetDev(Mutate(netdev, &rng), &n);
    proc::MemInfo m;
    if (proc::ParseMemInfo(Mutate(meminfo, &rng), &m)) {
      EXPECT_LE(m.available_bytes, m.total_bytes);
    }
  }
}

}  // namespace
}  // namespace trainscope
