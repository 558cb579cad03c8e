// Parsers of /proc and cgroup-v2 files, on text shaped like the kernel's.
#include "profiler/proc_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "profiler/sample_compute.h"
#include "profiler_test_util.h"

namespace trainscope::proc {
namespace {

TEST(ProcStatTest, ParsesTotalAndCoresAndOlderKernelsWithFewerFields) {
  CpuStat s;
  ASSERT_TRUE(
      ParseProcStat("cpu  10 1 5 100 3 0 2 0 7 0\n"
                    "cpu0 4 1 2 50 1 0 1 0 0 0\n"
                    "cpu3 6 0 3 50 2 0 1 0 0 0\n"
                    "intr 1 2 3\n"
                    "cpu7 1 2 3 4\n",  // 2.4-era line: 4 fields
                    &s));
  EXPECT_EQ(s.total.user, 10u);
  EXPECT_EQ(s.total.Total(), 10u + 1 + 5 + 100 + 3 + 0 + 2 + 0);  // guest (7) is inside user
  EXPECT_EQ(s.total.Busy(), 10u + 1 + 5 + 2);
  ASSERT_EQ(s.cores.size(), 8u);  // cpu0..cpu7; offline 1, 2, 4..6 stay zero
  EXPECT_EQ(s.cores[0].idle, 50u);
  EXPECT_EQ(s.cores[3].iowait, 2u);
  EXPECT_EQ(s.cores[1].Total(), 0u);
  EXPECT_EQ(s.cores[7].idle, 4u);
  EXPECT_EQ(s.cores[7].iowait, 0u);
  EXPECT_FALSE(ParseProcStat("intr 1\n", &s));
}

TEST(MemInfoTest, UsesMemAvailableElseFreePlusCaches) {
  MemInfo m;
  ASSERT_TRUE(ParseMemInfo("MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\n", &m));
  EXPECT_EQ(m.total_bytes, 1000u * 1024);
  EXPECT_EQ(m.available_bytes, 600u * 1024);
  ASSERT_TRUE(
      ParseMemInfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 20 kB\nCached: 30 kB\n", &m));
  EXPECT_EQ(m.available_bytes, 150u * 1024);
  EXPECT_FALSE(ParseMemInfo("MemFree: 100 kB\n", &m));
}

TEST(DiskStatsTest, CountsWholeDisksOnly) {
  DiskTotals d;
  ASSERT_TRUE(
      ParseDiskStats("   8 0 sda 1 0 10 0 1 0 20 0 0 0 0\n"
                     "   8 1 sda1 1 0 9 0 1 0 19 0 0 0 0\n"
                     " 259 0 nvme0n1 1 0 100 0 1 0 200 0 0 0 0\n"
                     " 259 1 nvme0n1p2 1 0 99 0 1 0 199 0 0 0 0\n"
                     " 179 0 mmcblk0 1 0 1000 0 1 0 2000 0 0 0 0\n"
                     " 179 1 mmcblk0p1 1 0 999 0 1 0 1999 0 0 0 0\n"
                     "   7 0 loop0 1 0 5 0 1 0 5 0 0 0 0\n"
                     " 253 0 dm-0 1 0 5 0 1 0 5 0 0 0 0\n"
                     "   9 0 md0 1 0 5 0 1 0 5 0 0 0 0\n"
                     " 252 0 vda 1 0 10000 0 1 0 20000 0 0 0 0\n",
                     &d));
  EXPECT_EQ(d.read_bytes, (10u + 100 + 1000 + 10000) * 512);
  EXPECT_EQ(d.write_bytes, (20u + 200 + 2000 + 20000) * 512);
}

TEST(NetDevTest, SumsAllButLoopback) {
  NetTotals n;
  ASSERT_TRUE(
      ParseNetDev("Inter-|   Receive |  Transmit\n face |bytes packets|bytes packets\n"
                  "    lo:   500 5 0 0 0 0 0 0   500 5 0 0 0 0 0 0\n"
                  "  eth0:1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n"
                  "  ib0: 7 1 0 0 0 0 0 0 9 1 0 0 0 0 0 0\n",
                  &n));
  EXPECT_EQ(n.rx_bytes, 1007u);
  EXPECT_EQ(n.tx_bytes, 2009u);
}

TEST(PidStatTest, CommWithSpacesAndParentheses) {
  PidStat p;
  ASSERT_TRUE(
      ParsePidStat("77 (a) b) (c) R 12 77 77 0 -1 0 0 0 0 0 300 45 9 9 20 0 1 0 5 6 789 "
                   "0 0\n",
                   &p));
  EXPECT_EQ(p.pid, 77);
  EXPECT_EQ(p.ppid, 12);
  EXPECT_EQ(p.cpu_ticks, 345u);  // utime + stime, not children's
  EXPECT_EQ(p.rss_pages, 789);
  EXPECT_FALSE(ParsePidStat("77 (trunc) R 12 77", &p));
  EXPECT_FALSE(ParsePidStat("", &p));
}

TEST(SchedstatTest, RunDelayIsTheSecondField) {
  EXPECT_EQ(ParseSchedstatRunDelay("597306 18838 2\n"), 18838u);
  EXPECT_EQ(ParseSchedstatRunDelay("5 7"), 7u);
  EXPECT_EQ(ParseSchedstatRunDelay("597306\n"), std::nullopt);
  EXPECT_EQ(ParseSchedstatRunDelay("a b c"), std::nullopt);
  EXPECT_EQ(ParseSchedstatRunDelay(""), std::nullopt);
}

TEST(CgroupTest, LimitsAndUsage) {
  EXPECT_EQ(ParseCgroupMemoryMax("max\n"), std::nullopt);
  EXPECT_EQ(ParseCgroupMemoryMax("1073741824\n"), 1073741824u);
  EXPECT_EQ(ParseCgroupCpuMax("max 100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(*ParseCgroupCpuMax("150000 100000\n"), 1.5);
  EXPECT_EQ(ParseCgroupCpuUsageUsec("usage_usec 42\nuser_usec 40\n"), 42u);
  EXPECT_EQ(ParseCgroupCpuUsageUsec("user_usec 40\n"), std::nullopt);
  EXPECT_EQ(ParseCgroupV2Path("12:memory:/x\n0::/user.slice/a\n"), "/user.slice/a");
  EXPECT_EQ(ParseCgroupV2Path("4:memory:/x\n"), std::nullopt);
}

}  // namespace
}  // namespace trainscope::proc

// ProcReader over the fixture trees: the process tree is re-discovered only every rescan interval,
// and only members are read in between.
namespace trainscope::proc {
namespace {

TEST(ProcReaderTest, ProcessTreeIsRediscoveredEveryRescanInterval) {
  test_util::TempDir root;
  test_util::MirrorTreeInPlace(test_util::ProfilerDataDir() + "/snap1", root.path());
  ProcReader reader(root.path() + "/proc", root.path() + "/cgroup", 4242,
                    /*rescan_interval_us=*/2000000);
  RawSnapshot s;
  reader.Read(1000000, &s);
  EXPECT_EQ(s.process_count, 4);  // 4242, 4300, 4310, 4311; not 1 or 999
  EXPECT_EQ(s.member_ticks.count(999), 0u);
  EXPECT_EQ(s.process_cpu_ticks, 1200u + 600 + 50 + 7000);

  test_util::MirrorTreeInPlace(test_util::ProfilerDataDir() + "/snap2", root.path());
  reader.Read(1500000, &s);  // no rescan yet: 4311 is gone, 4320 not found yet
  EXPECT_EQ(s.process_count, 3);
  EXPECT_EQ(s.member_ticks.count(4320), 0u);
  reader.Read(3000000, &s);  // 2 s after the first scan
  EXPECT_EQ(s.process_count, 4);
  EXPECT_EQ(s.member_ticks.at(4320), 3000u);
  EXPECT_EQ(s.process_rss_pages, 25000 + 5000 + 1000 + 2000);
  // The cgroup of proc/self/cgroup ("0::/train.slice/job") under the cgroup root.
  EXPECT_EQ(s.cgroup_memory_max, 8589934592u);
  EXPECT_EQ(s.cgroup_cpu_usage_usec, 1600000u);
  EXPECT_THAT(reader.DescribeSources(), ::testing::HasSubstr("cgroup v2"));
}

// The members' run_delay (schedstat) gives ProcessTreeCPUWaitPercent: the time they were ready to
// run but waited for a CPU, summed over the members present in both snapshots.
TEST(ProcReaderTest, MembersWaitForACpuFromSchedstat) {
  test_util::TempDir root;
  test_util::MirrorTreeInPlace(test_util::ProfilerDataDir() + "/snap1", root.path());
  auto write = [&](int pid, const std::string& text) {
    std::ofstream(root.path() + "/proc/" + std::to_string(pid) + "/schedstat") << text;
  };
  write(4242, "100 1000000000 5\n");
  write(4300, "100 2000000 5\n");
  ProcReader reader(root.path() + "/proc", root.path() + "/cgroup", 4242, 2000000);
  RawSnapshot a, b;
  reader.Read(1000000, &a);
  EXPECT_EQ(a.member_wait_ns.at(4242), 1000000000u);
  EXPECT_EQ(a.member_wait_ns.at(4300), 2000000u);
  EXPECT_EQ(a.member_wait_ns.count(4310), 0u);  // no schedstat file: not counted
  write(4242, "100 1250000000 5\n");            // waited 0.25 s of the next 0.5 s
  write(4300, "100 52000000 5\n");              // and 0.05 s
  reader.Read(1500000, &b);
  SystemSample s;
  ComputeSample(&a, b, 100, 4096, &s);
  ASSERT_TRUE(s.process_cpu_wait_percent.has_value());
  EXPECT_NEAR(*s.process_cpu_wait_percent, 60.0, 1e-9);  // (0.25 + 0.05) / 0.5 s
}

TEST(ProcReaderTest, NoSchedstatMeansNoWait) {
  test_util::TempDir root;
  test_util::MirrorTreeInPlace(test_util::ProfilerDataDir() + "/snap1", root.path());
  ProcReader reader(root.path() + "/proc", root.path() + "/cgroup", 4242, 2000000);
  RawSnapshot a, b;
  reader.Read(1000000, &a);
  reader.Read(1500000, &b);
  SystemSample s;
  ComputeSample(&a, b, 100, 4096, &s);
  EXPECT_TRUE(s.process_cpu_percent.has_value());
  EXPECT_FALSE(s.process_cpu_wait_percent.has_value());
}

TEST(ProcReaderTest, NoRootPidMeansNoProcessTree) {
  test_util::TempDir root;
  test_util::MirrorTreeInPlace(test_util::ProfilerDataDir() + "/snap1", root.path());
  ProcReader reader(root.path() + "/proc", root.path() + "/none", 0, 0);
  RawSnapshot s;
  reader.Read(1, &s);
  EXPECT_FALSE(s.process_count.has_value());
  EXPECT_TRUE(s.cpu.has_value());
  EXPECT_FALSE(s.cgroup_cpu_usage_usec.has_value());  // no cgroup v2 under that root
}

}  // namespace
}  // namespace trainscope::proc
