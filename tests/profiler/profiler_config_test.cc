// smdebug's profiler config: parsing, key matching, sub-configs, profiling windows, environment.
#include "trainscope/profiler_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

namespace trainscope {
namespace {

using ::testing::HasSubstr;

TEST(ProfilerConfigTest, ParsesSmdebugsExample) {
  auto c = ParseProfilerConfig(R"({"ProfilingParameters": {"ProfilerEnabled": true,
      "LocalPath": "/opt/ml/output/Profiler", "RotateMaxFileSizeInBytes": 1048576,
      "RotateFileCloseIntervalInSeconds": 30, "FileOpenFailThreshold": 5,
      "DetailedProfilingConfig": "{\"StartStep\": 2, \"NumSteps\": 3}",
      "DataloaderProfilingConfig": "{\"StartStep\": 1, \"MetricsRegex\": \".*Iter.*\"}",
      "PythonProfilingConfig": "{\"StartStep\":9,\"NumSteps\":1,\"ProfilerName\":\"pyinstrument\"}",
      "SMDataParallelProfilingConfig": "{\"StartTimeInSecSinceEpoch\": 1700000000.5, \"DurationInSeconds\": 10}"}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->enabled);
  EXPECT_EQ(c->local_path, "/opt/ml/output/Profiler");  // case kept (smdebug lowercases it)
  EXPECT_EQ(c->rotate_max_file_size_bytes, 1048576u);
  EXPECT_EQ(c->rotate_file_close_interval_seconds, 30);
  EXPECT_EQ(c->file_open_fail_threshold, 5);
  EXPECT_FALSE(c->system_monitor_interval_millis.has_value());
  EXPECT_TRUE(c->detailed_profiling.enabled());
  EXPECT_EQ(c->detailed_profiling.start_step, 2);
  EXPECT_EQ(c->detailed_profiling.num_steps, 3);
  EXPECT_EQ(c->dataloader_profiling.metrics_regex, ".*Iter.*");
  EXPECT_EQ(c->python_profiling.profiler_name, "pyinstrument");
  EXPECT_EQ(c->python_profiling.cprofile_timer, "");
  EXPECT_DOUBLE_EQ(*c->smdataparallel_profiling.start_time_s, 1700000000.5);
  EXPECT_DOUBLE_EQ(*c->smdataparallel_profiling.duration_s, 10);
  EXPECT_TRUE(c->warnings.empty()) << c->warnings[0];
}

TEST(ProfilerConfigTest, KeysMatchIgnoringCaseAndUnderscores) {
  auto c = ParseProfilerConfig(R"({"profilingparameters": {"LOCALPATH": "/x",
      "rotate_max_file_size_in_bytes": "2048", "system_monitor_interval_millis": 1000,
      "detailedprofilingconfig": {"startstep": "4"}}})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->local_path, "/x");
  EXPECT_EQ(c->rotate_max_file_size_bytes, 2048u);  // a numeric string, as smdebug's int(float())
  EXPECT_EQ(c->system_monitor_interval_millis, 1000);
  EXPECT_EQ(c->detailed_profiling.start_step, 4);  // an object accepted as well as a string
  EXPECT_FALSE(c->dataloader_profiling.specified);
}

TEST(ProfilerConfigTest, IntervalOutOfRangeIsInvalidArgumentNamingTheRange) {
  for (const char* text :
       {R"({"ProfilingParameters": {"SystemMonitorIntervalMillis": 50}})",
        R"({"ProfilingIntervalInMilliseconds": 120000,
                               "ProfilingParameters": {"LocalPath": "/x"}})",
        R"({"ProfilingParameters": {"system_monitor_interval_millis": 250.5}})"}) {
    auto c = ParseProfilerConfig(text, "/cfg.json");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(c.status().message(), HasSubstr("/cfg.json"));
    EXPECT_THAT(c.status().message(), HasSubstr("allowed 100 to 60000 ms"));
  }
  auto top = ParseProfilerConfig(
      R"({"ProfilingIntervalInMilliseconds": 200, "ProfilingParameters": {"LocalPath": "/x"}})");
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top->system_monitor_interval_millis, 200);
}

// trainscope's PhaseMinIntervalInMilliseconds: 0 (every step) by default; a bad value keeps the
// default with a warning naming the key.
TEST(ProfilerConfigTest, PhaseMinInterval) {
  auto none = ParseProfilerConfig(R"({"ProfilingParameters": {"LocalPath": "/x"}})");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->phase_min_interval_millis, 0);
  auto ten = ParseProfilerConfig(
      R"({"ProfilingParameters": {"LocalPath": "/x", "phase_min_interval_in_milliseconds": 10}})");
  ASSERT_TRUE(ten.ok());
  EXPECT_EQ(ten->phase_min_interval_millis, 10);
  EXPECT_TRUE(ten->warnings.empty());
  auto bad = ParseProfilerConfig(
      R"({"ProfilingParameters": {"LocalPath": "/x", "PhaseMinIntervalInMilliseconds": -1}})");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->phase_min_interval_millis, 0);
  ASSERT_EQ(bad->warnings.size(), 1u);
  EXPECT_THAT(bad->warnings[0], HasSubstr("PhaseMinIntervalInMilliseconds=-1"));
}

TEST(ProfilerConfigTest, BadSubConfigsDisableOnlyThemselves) {
  auto c = ParseProfilerConfig(R"({"ProfilingParameters": {"LocalPath": "/x",
      "DetailedProfilingConfig": "{'StartStep': 5, 'NumSteps': 2}",
      "DataloaderProfilingConfig": "{\"StartStep\": 1, \"DurationInSeconds\": 3}",
      "PythonProfilingConfig": "not json",
      "SMDataParallelProfilingConfig": "{\"NumSteps\": \"two\"}",
      "RotateFileCloseIntervalInSeconds": "soon"}})");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->enabled);
  EXPECT_TRUE(c->detailed_profiling.enabled());  // Python dict quotes, as smdebug's eval() takes
  EXPECT_EQ(c->detailed_profiling.start_step, 5);
  EXPECT_FALSE(c->dataloader_profiling.enabled());
  EXPECT_THAT(c->dataloader_profiling.error, HasSubstr("both step fields"));
  EXPECT_FALSE(c->python_profiling.enabled());
  EXPECT_FALSE(c->smdataparallel_profiling.enabled());
  EXPECT_FALSE(c->smdataparallel_profiling.num_steps.has_value());
  EXPECT_EQ(c->rotate_file_close_interval_seconds, 60);  // default kept
  ASSERT_EQ(c->warnings.size(), 4u);
  EXPECT_THAT(c->warnings[0], HasSubstr("RotateFileCloseIntervalInSeconds"));
  EXPECT_THAT(c->warnings[1], HasSubstr("DataloaderProfilingConfig"));
  EXPECT_THAT(c->warnings[2], HasSubstr("PythonProfilingConfig"));
  EXPECT_THAT(c->warnings[3], HasSubstr("NumSteps=\"two\""));
}

TEST(ProfilerConfigTest, DisabledForms) {
  for (const char* text :
       {R"({"DisableProfiler": true, "ProfilingParameters": {"LocalPath": "/x"}})", R"({})",
        R"({"ProfilingParameters": {}})",
        R"({"ProfilingParameters": {"ProfilerEnabled": false}})"}) {
    auto c = ParseProfilerConfig(text);
    ASSERT_TRUE(c.ok()) << text;
    EXPECT_FALSE(c->enabled) << text;
    EXPECT_EQ(c->warnings.size(), 1u) << text;
  }
  auto bad = ParseProfilerConfig("[1, 2", "/p.json");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("/p.json: not a JSON object"));
}

TEST(ProfileRangeTest, StepAndTimeWindowsAsSmdebug) {
  auto c = ParseProfilerConfig(R"({"ProfilingParameters": {
      "DetailedProfilingConfig": "{\"StartStep\": 5, \"NumSteps\": 2}",
      "DataloaderProfilingConfig": "{\"NumSteps\": 3}",
      "PythonProfilingConfig": "{\"StartTimeInSecSinceEpoch\": 100, \"DurationInSeconds\": 10}",
      "SMDataParallelProfilingConfig": "{\"StartTimeInSecSinceEpoch\": 100}"}})");
  ASSERT_TRUE(c.ok());
  ProfileRange& d = c->detailed_profiling;
  EXPECT_FALSE(d.ShouldProfile(4, 0));
  EXPECT_TRUE(d.ShouldProfile(5, 0));
  EXPECT_TRUE(d.ShouldProfile(6, 0));
  EXPECT_FALSE(d.ShouldProfile(7, 0));
  ProfileRange& dl = c->dataloader_profiling;  // no StartStep: starts at the first step asked
  EXPECT_TRUE(dl.ShouldProfile(10, 0));
  EXPECT_TRUE(dl.ShouldProfile(12, 0));
  EXPECT_FALSE(dl.ShouldProfile(13, 0));
  ProfileRange& py = c->python_profiling;
  EXPECT_EQ(py.profiler_name, "cprofile");
  EXPECT_EQ(py.cprofile_timer, "total_time");
  EXPECT_FALSE(py.ShouldProfile(1, 99.9));
  EXPECT_TRUE(py.ShouldProfile(2, 100));
  EXPECT_TRUE(py.ShouldProfile(3, 109.9));
  EXPECT_FALSE(py.ShouldProfile(4, 110));
  ProfileRange& smd = c->smdataparallel_profiling;  // start time without duration: one step
  EXPECT_FALSE(smd.ShouldProfile(1, 50));
  EXPECT_TRUE(smd.ShouldProfile(7, 150));
  EXPECT_FALSE(smd.ShouldProfile(8, 151));
  ProfileRange off;
  EXPECT_FALSE(off.ShouldProfile(0, 0));
}

class LoadProfilerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("TRAINSCOPE_PROFILER_CONFIG");
    unsetenv("SMPROFILER_CONFIG_PATH");
    ASSERT_TRUE(env_->CreateDirs("/cfg").ok());
    ASSERT_TRUE(env_->WriteFileAtomic("/cfg/ours.json",
                                      R"({"ProfilingParameters": {"LocalPath": "/ours"}})", false)
                    .ok());
    ASSERT_TRUE(env_->WriteFileAtomic("/cfg/smd.json",
                                      R"({"ProfilingParameters": {"LocalPath": "/smd"}})", false)
                    .ok());
    ASSERT_TRUE(env_->WriteFileAtomic("/cfg/bad.json", "{oops", false).ok());
  }
  void TearDown() override {
    unsetenv("TRAINSCOPE_PROFILER_CONFIG");
    unsetenv("SMPROFILER_CONFIG_PATH");
  }
  std::unique_ptr<Env> env_ = NewMemEnv();
};

TEST_F(LoadProfilerConfigTest, OursFirstThenSmdebugsThenOff) {
  auto none = LoadProfilerConfig(env_.get());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->enabled);
  EXPECT_THAT(none->warnings[0], HasSubstr("neither TRAINSCOPE_PROFILER_CONFIG nor"));

  setenv("SMPROFILER_CONFIG_PATH", "/cfg/smd.json", 1);
  auto smd = LoadProfilerConfig(env_.get());
  ASSERT_TRUE(smd.ok());
  EXPECT_EQ(smd->local_path, "/smd");
  EXPECT_EQ(smd->source_path, "/cfg/smd.json");

  setenv("TRAINSCOPE_PROFILER_CONFIG", "/cfg/ours.json", 1);
  auto ours = LoadProfilerConfig(env_.get());
  ASSERT_TRUE(ours.ok());
  EXPECT_EQ(ours->local_path, "/ours");

  setenv("TRAINSCOPE_PROFILER_CONFIG", "/cfg/missing.json", 1);
  auto missing = LoadProfilerConfig(env_.get());
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->enabled);
  EXPECT_THAT(missing->warnings[0], HasSubstr("/cfg/missing.json does not exist"));

  setenv("TRAINSCOPE_PROFILER_CONFIG", "/cfg/bad.json", 1);
  auto bad = LoadProfilerConfig(env_.get());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("/cfg/bad.json"));
}

}  // namespace
}  // namespace trainscope
