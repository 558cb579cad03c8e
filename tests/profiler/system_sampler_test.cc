// SystemSampler on fixture /proc and cgroup trees (exact rates), with fake GPUs, on a failing
// Env, and for real on this machine.
#include "trainscope/system_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "profiler_test_util.h"
#include "trainscope/metrics_reader.h"

namespace trainscope {
namespace {

namespace pf = profiler_format;
using ::testing::HasSubstr;
using trainscope::test_util::MirrorTreeInPlace;
using trainscope::test_util::ProfilerDataDir;
using trainscope::test_util::TempDir;

constexpr uint64_t kT0 = 1704110400ull * 1000000;  // 2024-01-01 12:00:00 UTC, a minute start
constexpr uint64_t kStep = 500000;                 // 0.5 s between the two fixture snapshots

// A sampler over a copy of the fixture trees, with a clock the test moves.
struct FixtureSampler {
  TempDir roots;
  uint64_t now = kT0;
  std::vector<std::string> reports;
  std::shared_ptr<FakeGpuSource> gpu = std::make_shared<FakeGpuSource>();
  std::unique_ptr<SystemSampler> sampler;

  FixtureSampler(Env* env, const std::string& base_dir, SystemSamplerOptions o = {}) {
    Load("snap1");
    o.proc_root = roots.path() + "/proc";
    o.cgroup_root = roots.path() + "/cgroup";
    o.root_pid = 4242;
    o.process_rescan_millis = 0;  // rescan every sample: 4320 appears, 4311 exits
    if (!o.gpu_source && !o.disable_gpu) o.gpu_source = gpu;
    o.clock = [this] { return now; };
    o.report = [this](std::string_view m) { reports.emplace_back(m); };
    auto s = SystemSampler::Create(env, base_dir, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    sampler = std::move(s).value();
  }
  void Load(const std::string& snap) {
    MirrorTreeInPlace(ProfilerDataDir() + "/" + snap, roots.path());
  }
};

// Records of a JSON-lines file by "Name|Dimension".
std::map<std::string, nlohmann::json> RecordsOf(const std::string& text, uint64_t ts_us) {
  std::map<std::string, nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (std::llround(j["Timestamp"].get<double>() * 1e6) != static_cast<int64_t>(ts_us)) continue;
    out[j["Name"].get<std::string>() + "|" + j["Dimension"].get<std::string>()] = j;
  }
  return out;
}

TEST(SystemSamplerTest, FixtureRatesAreExactlyWhatTheNumbersImply) {
  std::unique_ptr<Env> env = NewMemEnv();
  FixtureSampler f(env.get(), "/trial");
  GpuMetrics g0;
  g0.index = 0;
  g0.utilization_percent = 75;
  g0.memory_used_bytes = 20ull << 30;
  g0.memory_total_bytes = 80ull << 30;
  g0.memory_bandwidth_percent = 40;
  g0.temperature_celsius = 61;
  g0.power_watts = 250.5;
  g0.sm_clock_mhz = 1980;
  g0.memory_clock_mhz = 2619;
  GpuMetrics g1;  // a GPU whose driver reports only utilisation
  g1.index = 1;
  g1.utilization_percent = 5;
  f.gpu->Set({g0, g1});

  SystemSample first = f.sampler->SampleNow();
  EXPECT_FALSE(first.has_rates);
  EXPECT_EQ(first.process_count, 4);  // 4242, 4300, 4310, 4311
  f.Load("snap2");
  f.now = kT0 + kStep;
  SystemSample s = f.sampler->SampleNow();
  ASSERT_TRUE(s.has_rates);
  EXPECT_DOUBLE_EQ(s.interval_seconds, 0.5);

  // cpu0: delta user 100 + system 50 busy, idle 300, iowait 50 of 500 jiffies.
  ASSERT_EQ(s.cpu_core_percent.size(), 2u);
  EXPECT_DOUBLE_EQ(s.cpu_core_percent[0], 100.0 * 150 / 500);
  EXPECT_DOUBLE_EQ(s.iowait_core_percent[0], 100.0 * 50 / 500);
  // cpu1: delta user 400, idle 100.
  EXPECT_DOUBLE_EQ(s.cpu_core_percent[1], 100.0 * 400 / 500);
  EXPECT_DOUBLE_EQ(s.iowait_core_percent[1], 0);
  // cpu: 550 busy and 50 iowait of 1000.
  EXPECT_DOUBLE_EQ(s.cpu_total_percent, 55.0);
  EXPECT_DOUBLE_EQ(s.iowait_total_percent, 5.0);
  // Memory: MemTotal 16000000 kB, MemAvailable 12000000 kB.
  EXPECT_EQ(s.memory_total_bytes, 16000000ull * 1024);
  EXPECT_EQ(s.memory_used_bytes, 4000000ull * 1024);
  EXPECT_DOUBLE_EQ(*s.memory_used_percent, 25.0);
  // Process tree of 4242: 4300, 4310 stay, 4311 exited, 4320 is new (its lifetime ticks are not
  // this interval's); 999 is not in the tree. Ticks: 40 + 20 + 10.
  EXPECT_EQ(s.process_count, 4);
  const double tck = static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_DOUBLE_EQ(*s.process_cpu_percent, 100.0 * 70 / tck / 0.5);
  EXPECT_EQ(s.process_rss_bytes, (25000ull + 5000 + 1000 + 2000) * sysconf(_SC_PAGESIZE));
  // Disks: sda +2000 and nvme0n1 +1000 sectors read, sda +1000 written; partitions, loop and dm
  // are not counted.
  EXPECT_DOUBLE_EQ(*s.disk_read_bytes_per_s, 3000.0 * 512 / 0.5);
  EXPECT_DOUBLE_EQ(*s.disk_write_bytes_per_s, 1000.0 * 512 / 0.5);
  // Network: eth0 +500000 and eth1 +100 received, eth0 +50000 sent; lo not counted.
  EXPECT_DOUBLE_EQ(*s.net_rx_bytes_per_s, 500100 / 0.5);
  EXPECT_DOUBLE_EQ(*s.net_tx_bytes_per_s, 50000 / 0.5);
  // cgroup v2 at /train.slice/job (from proc/self/cgroup).
  EXPECT_EQ(s.cgroup_memory_max_bytes, 8589934592ull);
  EXPECT_EQ(s.cgroup_memory_current_bytes, 1073741824ull);
  EXPECT_DOUBLE_EQ(*s.cgroup_cpu_limit_cores, 2.0);
  EXPECT_DOUBLE_EQ(*s.cgroup_cpu_percent, 100.0 * 600000 / 500000);

  // The same numbers in the file, in smdebug's layout and record shape.
  std::string path = "/trial/system/incremental/2024010112/1704110400.algo-1.json";
  ASSERT_TRUE(env->FileExists(path));
  auto text = env->ReadFile(path);
  ASSERT_TRUE(text.ok());
  auto recs = RecordsOf(*text, kT0 + kStep);
  ASSERT_TRUE(recs.count("cpu0|CPUUtilization"));
  EXPECT_EQ(recs["cpu0|CPUUtilization"],
            nlohmann::json::parse(R"({"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization",
                "Value":30.0,"NodeId":"algo-1","Timestamp":1704110400.5})"));
  EXPECT_DOUBLE_EQ(recs["cpu1|I/OWaitPercentage"]["Value"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(recs["cpu|CPUUtilizationTotal"]["Value"].get<double>(), 55);
  EXPECT_DOUBLE_EQ(recs["MemoryUsedPercent|MemoryUsedPercent"]["Value"].get<double>(), 25);
  EXPECT_EQ(recs["MemoryUsedPercent|MemoryUsedPercent"]["Type"], "memory");
  EXPECT_DOUBLE_EQ(recs["disk|DiskReadBytesPerSecond"]["Value"].get<double>(), 3072000);
  EXPECT_DOUBLE_EQ(recs["network|NetworkRxBytesPerSecond"]["Value"].get<double>(), 1000200);
  EXPECT_DOUBLE_EQ(recs["process_tree|ProcessTreeProcessCount"]["Value"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(recs["cgroup|CgroupCPULimitCores"]["Value"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(recs["gpu0|GPUUtilization"]["Value"].get<double>(), 75);
  EXPECT_DOUBLE_EQ(recs["gpu0|GPUMemoryUtilization"]["Value"].get<double>(), 25);
  EXPECT_DOUBLE_EQ(recs["gpu0|GPUPowerWatts"]["Value"].get<double>(), 250.5);
  EXPECT_DOUBLE_EQ(recs["gpu0|GPUSMClockMHz"]["Value"].get<double>(), 1980);
  EXPECT_EQ(recs["gpu0|GPUUtilization"]["Type"], "gpu");
  EXPECT_DOUBLE_EQ(recs["gpu1|GPUUtilization"]["Value"].get<double>(), 5);
  EXPECT_FALSE(recs.count("gpu1|GPUMemoryUtilization"));  // not reported, not invented
  EXPECT_FALSE(recs.count("gpu1|GPUTemperatureCelsius"));
  // The first sample wrote levels only: no rates from a single snapshot.
  auto first_recs = RecordsOf(*text, kT0);
  EXPECT_TRUE(first_recs.count("MemoryUsedPercent|MemoryUsedPercent"));
  EXPECT_FALSE(first_recs.count("cpu0|CPUUtilization"));
  EXPECT_FALSE(first_recs.count("disk|DiskReadBytesPerSecond"));
  EXPECT_EQ(f.sampler->records_written(), static_cast<int64_t>(first_recs.size() + recs.size()));
  EXPECT_TRUE(f.reports.empty()) << f.reports[0];
}

TEST(SystemSamplerTest, FilesRotateEveryMinuteAndParseBack) {
  std::unique_ptr<Env> env = NewMemEnv();
  FixtureSampler f(env.get(), "/trial");
  f.now = kT0 - 700000;  // 11:59:59.3
  f.sampler->SampleNow();
  f.Load("snap2");
  f.now = kT0 - 200000;  // 11:59:59.8: same minute
  f.sampler->SampleNow();
  f.now = kT0 + 300000;  // 12:00:00.3: next minute, next hour folder
  f.sampler->SampleNow();
  EXPECT_TRUE(env->FileExists("/trial/system/incremental/2024010111/1704110340.algo-1.json"));
  EXPECT_TRUE(env->FileExists("/trial/system/incremental/2024010112/1704110400.algo-1.json"));

  SystemMetricsReader reader(env.get(), "/trial");
  ASSERT_TRUE(reader.Refresh().ok());
  ASSERT_EQ(reader.files().size(), 2u);
  EXPECT_EQ(reader.FirstTimestampMicros(), static_cast<int64_t>(kT0) - 60000000);
  EXPECT_EQ(reader.LatestTimestampMicros(), static_cast<int64_t>(kT0));
  auto all = reader.GetEvents(0, kTimeMax);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(static_cast<int64_t>(all->size()), f.sampler->records_written());
  auto cpu = reader.GetEvents(kT0 - 200000, kT0 + 300001, {.dimension = "CPUUtilization"});
  ASSERT_TRUE(cpu.ok());
  ASSERT_EQ(cpu->size(), 4u);  // cpu0, cpu1 at two instants
  EXPECT_EQ((*cpu)[0].timestamp_us, static_cast<int64_t>(kT0 - 200000));
  EXPECT_EQ((*cpu)[0].node_id, "algo-1");
  EXPECT_EQ((*cpu)[3].timestamp_us, static_cast<int64_t>(kT0 + 300000));
  EXPECT_EQ(reader.stats().lines_skipped, 0);
}

TEST(SystemSamplerTest, IntervalOutOfRangeIsInvalidArgumentNamingTheRange) {
  std::unique_ptr<Env> env = NewMemEnv();
  for (int64_t bad : {0, 99, 60001, -5}) {
    SystemSamplerOptions o;
    o.interval_millis = bad;
    o.disable_gpu = true;
    auto s = SystemSampler::Create(env.get(), "/t", o);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("system_monitor_interval_millis"));
    EXPECT_THAT(s.status().message(), HasSubstr("allowed 100 to 60000 ms"));
  }
  for (int64_t good : {100, 500, 60000}) {
    SystemSamplerOptions o;
    o.interval_millis = good;
    o.disable_gpu = true;
    EXPECT_TRUE(SystemSampler::Create(env.get(), "/t", o).ok()) << good;
  }
}

TEST(SystemSamplerTest, WriteErrorsAreReportedOnceAndSamplingGoesOn) {
  std::unique_ptr<Env> mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  FixtureSampler f(&env, "/trial");
  env.SetCreateFails(true);
  for (int i = 0; i < 3; ++i) {
    f.now += kStep;
    f.sampler->SampleNow();
  }
  EXPECT_EQ(f.sampler->samples_taken(), 3);
  EXPECT_EQ(f.sampler->records_written(), 0);
  ASSERT_EQ(f.reports.size(), 1u);
  EXPECT_THAT(f.reports[0], HasSubstr("system metrics"));
  EXPECT_THAT(f.reports[0], HasSubstr("sampling goes on"));
  env.SetCreateFails(false);
  f.now += kStep;
  SystemSample s = f.sampler->SampleNow();
  EXPECT_GT(f.sampler->records_written(), 0);
  EXPECT_TRUE(s.has_rates);
  EXPECT_EQ(f.reports.size(), 1u);

  // A full disk mid-file: same story.
  env.SetDiskSpaceLeft(10);
  f.now += kStep;
  f.sampler->SampleNow();
  f.now += kStep;
  f.sampler->SampleNow();
  EXPECT_EQ(f.reports.size(), 1u);  // "write" was already reported
  EXPECT_EQ(f.sampler->samples_taken(), 6);
}

TEST(SystemSamplerTest, GpuSampleErrorIsReportedOnceAndCpuMetricsContinue) {
  std::unique_ptr<Env> env = NewMemEnv();
  FixtureSampler f(env.get(), "/trial");
  f.gpu->SetError(Status::Unavailable("GPU fell off the bus"));
  f.sampler->SampleNow();
  f.now += kStep;
  f.Load("snap2");
  SystemSample s = f.sampler->SampleNow();
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_EQ(s.cpu_core_percent.size(), 2u);
  ASSERT_EQ(f.reports.size(), 1u);
  EXPECT_THAT(f.reports[0], HasSubstr("GPU fell off the bus"));
  EXPECT_EQ(f.gpu->sample_calls(), 2);
}

TEST(SystemSamplerTest, MissingProcFilesLeaveMetricsOutAndSayWhy) {
  std::unique_ptr<Env> env = NewMemEnv();
  TempDir empty;
  SystemSamplerOptions o;
  o.proc_root = empty.path() + "/no-proc";
  o.cgroup_root = empty.path() + "/no-cgroup";
  o.root_pid = 4242;
  o.disable_gpu = true;
  std::vector<std::string> reports;
  o.report = [&](std::string_view m) { reports.emplace_back(m); };
  auto s = SystemSampler::Create(env.get(), "/trial", o);
  ASSERT_TRUE(s.ok());
  SystemSample a = (*s)->SampleNow();
  SystemSample b = (*s)->SampleNow();
  EXPECT_TRUE(b.cpu_core_percent.empty());
  EXPECT_FALSE(b.memory_used_bytes.has_value());
  EXPECT_EQ(b.process_count, 0);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_THAT(reports[0], HasSubstr("no-proc/stat"));
  EXPECT_EQ((*s)->gpu_status(), "GPU metrics disabled");
}

TEST(SystemSamplerTest, WithoutNvmlTheSamplerSaysSoOnceAndGoesOn) {
  std::unique_ptr<Env> env = NewMemEnv();
  std::vector<std::string> reports;
  SystemSamplerOptions o;
  o.report = [&](std::string_view m) { reports.emplace_back(m); };
  auto s = SystemSampler::Create(env.get(), "/trial", o);
  ASSERT_TRUE(s.ok());
  (*s)->SampleNow();
  (*s)->SampleNow();
  auto nvml = NvmlGpuSource::Open();
  if (nvml.ok()) {
    EXPECT_TRUE(reports.empty());  // a machine with NVIDIA's driver
    EXPECT_THAT((*s)->gpu_status(), HasSubstr("NVML"));
  } else {
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0], "no NVIDIA GPU found (libnvidia-ml.so.1 not loadable): GPU metrics off");
    EXPECT_EQ((*s)->gpu_status(), reports[0]);
    EXPECT_TRUE((*s)->Latest()->gpus.empty());
  }
}

TEST(SystemSamplerTest, RealRunOnThisMachineGivesPlausibleNumbers) {
  TempDir dir;
  SystemSamplerOptions o;
  o.interval_millis = 100;
  o.root_pid = static_cast<int>(getpid());
  o.disable_gpu = true;
  auto s = SystemSampler::Create(Env::Default(), dir.path(), o);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Start().ok());
  EXPECT_TRUE((*s)->running());
  // Busy one core a little so the process tree has CPU time to report.
  volatile double sink = 0;
  for (int i = 0; i < 300 && (*s)->samples_taken() < 4; ++i) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (std::chrono::steady_clock::now() < until) sink = sink + 1;
  }
  (*s)->Stop();
  EXPECT_FALSE((*s)->running());
  ASSERT_GE((*s)->samples_taken(), 4);

  SystemMetricsReader reader(Env::Default(), dir.path());
  auto events = reader.GetEvents(0, kTimeMax);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(reader.stats().lines_skipped, 0);
  int cores = 0, mem = 0, rss = 0;
  for (const SystemMetricEvent& e : *events) {
    EXPECT_EQ(e.node_id, "algo-1");
    if (e.dimension == pf::kDimCpuUtilization || e.dimension == pf::kDimIoWaitPercentage ||
        e.dimension == pf::kDimCpuUtilizationTotal) {
      EXPECT_GE(e.value, 0) << e.name;
      EXPECT_LE(e.value, 100) << e.name;
      cores += e.dimension == pf::kDimCpuUtilization;
    }
    if (e.name == pf::kMemoryUsedPercent) {
      EXPECT_GT(e.value, 0);
      EXPECT_LT(e.value, 100);
      ++mem;
    }
    if (e.dimension == pf::kDimProcessTreeRss) {
      EXPECT_GT(e.value, 1 << 20);  // this test binary holds more than 1 MiB
      ++rss;
    }
    if (e.dimension == pf::kDimProcessTreeCpu) {
      EXPECT_GE(e.value, 0);
    }
  }
  EXPECT_GE(cores, 1);
  EXPECT_EQ(mem, (*s)->samples_taken());
  EXPECT_EQ(rss, (*s)->samples_taken());
}

}  // namespace
}  // namespace trainscope
