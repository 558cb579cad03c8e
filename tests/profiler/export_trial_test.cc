// Writes a complete profiler trial with our writers (system metrics from the fixture /proc with
// fake GPUs, a rotated framework timeline, a rule finding) and its merged trace, and checks it.
// When TRAINSCOPE_PROFILER_EXPORT_DIR is set the trial is left there:
// tests/python/test_timeline_format.py runs this test to get files that smdebug's own readers and
// Python's json module then check.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "profiler_test_util.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/system_sampler.h"
#include "trainscope/timeline.h"
#include "trainscope/trace_merge.h"

namespace trainscope {
namespace {

constexpr uint64_t kT0 = 1704110400ull * 1000000;  // 2024-01-01 12:00:00 UTC

TEST(ExportTrialTest, OurWritersProduceAReadableTrialAndAValidMergedTrace) {
  test_util::TempDir tmp;
  const char* env_dir = getenv("TRAINSCOPE_PROFILER_EXPORT_DIR");
  const std::string dir = env_dir && *env_dir ? std::string(env_dir) : tmp.path() + "/trial";
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(dir).ok());

  // System metrics: three samples 0.5 s apart over the fixture trees, two fake GPUs.
  test_util::TempDir roots;
  test_util::MirrorTreeInPlace(test_util::ProfilerDataDir() + "/snap1", roots.path());
  uint64_t now = kT0;
  auto gpu = std::make_shared<FakeGpuSource>();
  GpuMetrics g0;
  g0.index = 0;
  g0.utilization_percent = 80;
  g0.memory_used_bytes = 10ull << 30;
  g0.memory_total_bytes = 40ull << 30;
  GpuMetrics g1 = g0;
  g1.index = 1;
  g1.utilization_percent = 20;
  gpu->Set({g0, g1});
  SystemSamplerOptions so;
  so.proc_root = roots.path() + "/proc";
  so.cgroup_root = roots.path() + "/cgroup";
  so.root_pid = 4242;
  so.gpu_source = gpu;
  so.clock = [&now] { return now; };
  auto sampler = SystemSampler::Create(env, dir, so);
  ASSERT_TRUE(sampler.ok());
  (*sampler)->SampleNow();
  test_util::MirrorTreeInPlace(test_util::ProfilerDataDir() + "/snap2", roots.path());
  now += 500000;
  (*sampler)->SampleNow();
  now += 500000;
  (*sampler)->SampleNow();
  (*sampler)->Stop();

  // Framework timeline: ten steps, rotated for size, node id as smdebug forms it for a rank.
  TimelineWriterOptions to;
  to.node_id = "4242-algo-1";
  to.start_time_us = kT0;
  to.max_file_size_bytes = 2000;
  to.flush_interval_millis = 0;
  to.clock = [&now] { return now; };
  auto tl = TimelineWriter::Create(env, dir, to);
  ASSERT_TRUE(tl.ok());
  for (int step = 0; step < 10; ++step) {
    const uint64_t s = kT0 + step * 100000;
    const std::string n = std::to_string(step);
    (*tl)->Record("DataLoaderIter", "next", s, 5000, {{"step_num", n}});
    (*tl)->Record("Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", s + 5000, 80000,
                  {{"step_num", n}, {"pid", 4242}});
    (*tl)->Record("Forward", "Net", s + 6000, 30000, {{"step_num", n}});
    (*tl)->Record("Backward(post-forward)", "Net", s + 40000, 40000, {{"step_num", n}});
  }
  (*tl)->RecordInstant("Step:ModeKeys.TRAIN", "checkpoint", kT0 + 999000, {}, 'g');
  ASSERT_TRUE((*tl)->Close().ok());
  ASSERT_GT((*tl)->finished_files().size(), 3u);

  test_util::WriteAll(
      dir + "/rule-output/StepOutlier/events.jsonl",
      "{\"kind\":\"finding\",\"rule\":\"StepOutlier\",\"time_us\":" + std::to_string(kT0 + 500000) +
          ",\"step\":5,\"explanation\":\"step 5 is an outlier\"}\n");

  auto merged = MergeTimeline(env, dir, dir + "/merged_trace.json");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_TRUE(merged->warnings.empty()) << merged->warnings[0];
  EXPECT_EQ(merged->framework_events, 41);
  EXPECT_EQ(merged->rule_events, 1);
  EXPECT_EQ(merged->counter_events, (*sampler)->records_written());
  Status valid = ValidateTraceEvents(test_util::ReadAll(dir + "/merged_trace.json"));
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  for (const std::string& rel : (*tl)->finished_files()) {
    Status v = ValidateTraceEvents(test_util::ReadAll(dir + "/" + rel));
    EXPECT_TRUE(v.ok()) << rel << ": " << v.ToString();
  }

  // And our readers see it all again.
  TimelineReader reader(env, dir);
  auto by_step = reader.GetEventsByStep(3, 5);
  ASSERT_TRUE(by_step.ok());
  EXPECT_EQ(by_step->size(), 8u);
  SystemMetricsReader sys(env, dir);
  auto gpu_events = sys.GetEvents(kTimeMin, kTimeMax, {.dimension = "GPUUtilization"});
  ASSERT_TRUE(gpu_events.ok());
  EXPECT_EQ(gpu_events->size(), 6u);
}

}  // namespace
}  // namespace trainscope
