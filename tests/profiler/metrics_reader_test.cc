// Readers on smdebug-written files, by time and by step, and on truncated and corrupt files
// (never a crash, bad lines skipped and counted).
#include "trainscope/metrics_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "profiler_test_util.h"
#include "trainscope/timeline.h"

namespace trainscope {
namespace {

using ::testing::HasSubstr;

const std::string kSmdTrial = test_util::ProfilerDataDir() + "/smdebug_trial";
constexpr int64_t kT0 = 1795301746ll * 1000000;  // see data/smdebug_trial/README.md
constexpr int64_t kStepGap = 15625;

TEST(TimelineReaderTest, ReadsSmdebugWrittenFiles) {
  TimelineReader reader(Env::Default(), kSmdTrial);
  ASSERT_TRUE(reader.Refresh().ok());
  ASSERT_EQ(reader.files().size(), 3u);
  EXPECT_EQ(reader.files()[0].node_id, "4092-vm");
  EXPECT_EQ(reader.files()[0].suffix, "pythontimeline.json");
  EXPECT_EQ(reader.LatestTimestampMicros(), kT0 + 125000);
  auto events = reader.GetEvents(kT0, kT0 + 1000000);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 13u);
  EXPECT_EQ(reader.stats().lines_skipped, 0);
  for (int step = 0; step < 6; ++step) {
    const TimelineEvent& s = (*events)[2 * step];
    const TimelineEvent& fwd = (*events)[2 * step + 1];
    EXPECT_EQ(s.phase, "Step:ModeKeys.TRAIN");
    EXPECT_EQ(s.name, "Step:ModeKeys.TRAIN");
    EXPECT_EQ(s.start_us, kT0 + step * kStepGap);
    EXPECT_EQ(s.dur_us, 7812);
    EXPECT_EQ(s.step, step);
    EXPECT_EQ(*s.Arg("pid"), "4242");
    EXPECT_EQ(fwd.phase, "Forward");
    EXPECT_EQ(fwd.start_us, kT0 + step * kStepGap + 976);
    EXPECT_EQ(fwd.dur_us, 3906);
    EXPECT_EQ(fwd.step, step);
  }
  EXPECT_EQ(events->back().ph, 'i');
  EXPECT_EQ(events->back().name, "marker");
  EXPECT_EQ(events->back().start_us, kT0 + 125000);

  // Half-open ranges: an event ending exactly at start is out, one starting at end is out.
  auto mid = reader.GetEvents(kT0 + 7812, kT0 + 2 * kStepGap);
  ASSERT_TRUE(mid.ok());
  ASSERT_EQ(mid->size(), 2u);  // step 1 and its forward
  EXPECT_EQ((*mid)[0].step, 1);
  auto steps_only = reader.GetEvents(kTimeMin, kTimeMax, {.phase_prefix = "Step:"});
  ASSERT_TRUE(steps_only.ok());
  // Six steps; not the marker: smdebug writes no process_name for an instant event's phase, so
  // in its file the marker's phase is unknown.
  EXPECT_EQ(steps_only->size(), 6u);
  EXPECT_EQ(events->back().phase, "Unknown");
  auto other_node = reader.GetEvents(kTimeMin, kTimeMax, {.node_id = "algo-9"});
  ASSERT_TRUE(other_node.ok());
  EXPECT_TRUE(other_node->empty());
}

TEST(TimelineReaderTest, StepRanges) {
  TimelineReader reader(Env::Default(), kSmdTrial);
  auto r = reader.GetStepTimeRange(1, 3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->start_us, kT0 + kStepGap);
  EXPECT_EQ(r->end_us, kT0 + 3 * kStepGap);
  auto by_step = reader.GetEventsByStep(2, 3);
  ASSERT_TRUE(by_step.ok());
  ASSERT_EQ(by_step->size(), 2u);
  EXPECT_EQ((*by_step)[0].step, 2);
  EXPECT_EQ((*by_step)[1].step, 2);
  // Step 99 never happened: the range ends just after the last event of steps 4..98.
  auto open_end = reader.GetStepTimeRange(4, 99);
  ASSERT_TRUE(open_end.ok());
  EXPECT_EQ(open_end->end_us, kT0 + 5 * kStepGap + 7812 + 1);
  auto missing = reader.GetStepTimeRange(42, 43);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("step_num 42"));
  EXPECT_EQ(reader.GetStepTimeRange(3, 3).status().code(), StatusCode::kInvalidArgument);
}

TEST(SystemMetricsReaderTest, ReadsAgentStyleFilesAndSkipsTheTornLastLine) {
  SystemMetricsReader reader(Env::Default(), kSmdTrial);
  auto all = reader.GetEvents(kTimeMin, kTimeMax);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 16u);
  EXPECT_EQ(reader.stats().lines_skipped, 1);
  ASSERT_EQ(reader.stats().problems.size(), 1u);
  EXPECT_THAT(reader.stats().problems[0], HasSubstr("1795301700.algo-1.json line 17"));
  EXPECT_EQ(reader.FirstTimestampMicros(), 1795301700ll * 1000000);
  const SystemMetricEvent& e = (*all)[0];
  EXPECT_EQ(e.type, "cpu");
  EXPECT_EQ(e.name, "cpu0");
  EXPECT_EQ(e.dimension, "CPUUtilization");
  EXPECT_EQ(e.value, 10);
  EXPECT_EQ(e.node_id, "algo-1");
  EXPECT_EQ(e.timestamp_us, kT0);
  EXPECT_DOUBLE_EQ(e.timestamp(), 1795301746.0);

  auto gpu = reader.GetEvents(kT0 + 500000, kT0 + 1500000, {.type = "gpu"});
  ASSERT_TRUE(gpu.ok());
  ASSERT_EQ(gpu->size(), 2u);  // 0.5 s and 1.0 s; 1.5 s is the excluded end
  EXPECT_EQ((*gpu)[0].value, 51);
  EXPECT_EQ((*gpu)[1].value, 52);
  auto mem = reader.GetEvents(kTimeMin, kTimeMax, {.dimension = "MemoryUsedPercent"});
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ(mem->size(), 4u);

  // By step, with the times from the timeline: step 0 is [t0, t0 + 15625 us): the first sample.
  TimelineReader timeline(Env::Default(), kSmdTrial);
  auto step0 = GetSystemEventsByStep(&reader, &timeline, 0, 1);
  ASSERT_TRUE(step0.ok());
  ASSERT_EQ(step0->size(), 4u);
  for (const auto& ev : *step0) EXPECT_EQ(ev.timestamp_us, kT0);
}

TEST(SystemMetricsReaderTest, AGrowingFileIsReadAgain) {
  auto env = NewMemEnv();
  const std::string path = "/t/system/incremental/2024010112/1704110400.algo-2.json";
  ASSERT_TRUE(env->CreateDirs("/t/system/incremental/2024010112").ok());
  auto file = env->NewWritableFile(path);
  ASSERT_TRUE(file.ok());
  const std::string line =
      R"({"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":1,"NodeId":"algo-2","Timestamp":1704110400.25})"
      "\n";
  ASSERT_TRUE((*file)->Append(line).ok());
  ASSERT_TRUE((*file)->Flush().ok());
  SystemMetricsReader reader(env.get(), "/t");
  auto a = reader.GetEvents(kTimeMin, kTimeMax);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size(), 1u);
  ASSERT_TRUE((*file)->Append(line).ok());
  ASSERT_TRUE((*file)->Close().ok());
  auto b = reader.GetEvents(kTimeMin, kTimeMax, {.node_id = "algo-2"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 2u);
  EXPECT_EQ(reader.files()[0].node_id, "algo-2");
}

// Every prefix of a file (a writer killed at any byte) parses without crashing into a subset of
// the whole file's events, skipping at most the one torn line.
TEST(ReaderToleranceTest, EveryTruncationOfATimelineFile) {
  for (const char* name : {"1795301745962268_4092-vm_pythontimeline.json",
                           "1795301745964013_4092-vm_pythontimeline.json"}) {
    const std::string text =
        test_util::ReadAll(kSmdTrial + "/framework/pevents/2026112122/" + std::string(name));
    ASSERT_FALSE(text.empty());
    ReaderStats full_stats;
    auto full = TimelineReader::ParseFile(text, "n", "pythontimeline.json", name, &full_stats);
    ASSERT_EQ(full.size(), 6u);
    std::set<std::pair<int64_t, std::string>> all;
    for (const auto& e : full) all.insert({e.start_us, e.name});
    size_t prev = 0;
    for (size_t len = 0; len <= text.size(); ++len) {
      ReaderStats stats;
      auto part = TimelineReader::ParseFile(std::string_view(text).substr(0, len), "n",
                                            "pythontimeline.json", name, &stats);
      EXPECT_LE(stats.lines_skipped, 1) << len;
      EXPECT_GE(part.size(), prev) << len;  // never loses what it had
      prev = part.size();
      for (const auto& e : part) {
        EXPECT_TRUE(all.count({e.start_us, e.name})) << len << " " << e.name << " " << e.start_us;
      }
    }
    EXPECT_EQ(prev, 6u);
  }
}

TEST(ReaderToleranceTest, CorruptLineInTheMiddleIsSkippedTheRestKept) {
  std::string text = test_util::ReadAll(
      kSmdTrial + "/framework/pevents/2026112122/1795301745962268_4092-vm_pythontimeline.json");
  size_t pos = text.find("\"Net.forward\"");
  ASSERT_NE(pos, std::string::npos);
  text[pos + 3] = '\x01';  // a control byte inside a string: invalid JSON
  ReaderStats stats;
  auto events = TimelineReader::ParseFile(text, "n", "pythontimeline.json", "f.json", &stats);
  EXPECT_EQ(stats.lines_skipped, 1);
  EXPECT_EQ(events.size(), 5u);
  // Garbage of every kind: no crash, nothing invented.
  for (std::string junk :
       {std::string(""), std::string("["), std::string("]"), std::string("\0\0\0", 3),
        std::string("{\"ph\":\"X\"}"), std::string("[{\"ph\":\"E\",\"ts\":5}]"), std::string("{}"),
        std::string("[1,2,3]"), std::string("{\"traceEvents\":7}"),
        std::string("[{\"ph\":\"X\",\"ts\":\"soon\",\"dur\":1}]"),
        std::string("[{\"ph\":\"XX\",\"ts\":1}]"),
        std::string("[{\"ph\":\"X\",\"ts\":1e300,\"dur\":-5}]")}) {
    ReaderStats s;
    auto ev = TimelineReader::ParseFile(junk, "n", "x.json", "junk", &s);
    for (const auto& e : ev) EXPECT_GE(e.dur_us, 0);
    EXPECT_LE(ev.size(), 1u) << junk;
  }
}

// Issue 17 (found by timeline_merge_fuzz): times no int64 microsecond holds are skipped, never
// converted (a system Timestamp of 1.8e13 s became INT64_MIN and overflowed the merger); huge
// ids, steps and times in a timeline file give no overflow (UBSan checks in the sanitizer suite).
TEST(ReaderToleranceTest, TimesOutOfRangeAreSkippedNotWrapped) {
  auto line = [](const std::string& ts) {
    return R"({"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":1,"Timestamp":)" +
           ts + "}\n";
  };
  ReaderStats stats;
  auto sys = SystemMetricsReader::ParseFile(
      line("1795301746.5") + line("17956412903481.63") + line("-1e300"), "f.json", &stats);
  ASSERT_EQ(sys.size(), 1u);
  EXPECT_EQ(sys[0].timestamp_us, 1795301746500000);
  EXPECT_EQ(stats.lines_skipped, 2);

  ReaderStats ts;
  auto ev = TimelineReader::ParseFile(
      "[" +
          std::string(R"({"ph":"M","name":"process_name","pid":1,"args":{"name":"Step:ModeKeys.)"
                      R"(TRAIN","start_time_since_epoch_in_micros":9223372036854775807}},)") +
          R"({"ph":"X","name":"a","pid":1e300,"tid":-1e300,"ts":9223372036854775807,"dur":1,)"
          R"("args":{"step_num":"99999999999999999999"}},)"
          "\n"
          R"({"ph":"B","name":"b","pid":1,"tid":1,"ts":-4000000000000000000},)"
          "\n"
          R"({"ph":"E","name":"b","pid":1,"tid":1,"ts":4000000000000000000},)"
          "\n"
          R"({"ph":"X","name":"c","pid":1,"tid":1,"ts":5,"dur":2,"args":{"step_num":1e300}}])",
      "n", "pythontimeline.json", "t.json", &ts);
  for (const auto& e : ev) {
    EXPECT_GE(e.dur_us, 0) << e.name;
    EXPECT_NE(e.name, "a");                      // its ts is out of range: not read
    EXPECT_FALSE(e.step.has_value()) << e.name;  // neither step number is an int64
  }
  bool c = false;
  for (const auto& e : ev) c |= e.name == "c" && e.start_us == 5;  // the base was out of range
  EXPECT_TRUE(c);
}

TEST(ReaderToleranceTest, EveryTruncationOfASystemFile) {
  const std::string text =
      test_util::ReadAll(kSmdTrial + "/system/incremental/2026112122/1795301700.algo-1.json");
  size_t prev = 0;
  for (size_t len = 0; len <= text.size(); ++len) {
    ReaderStats stats;
    auto part = SystemMetricsReader::ParseFile(std::string_view(text).substr(0, len), "f", &stats);
    EXPECT_LE(stats.lines_skipped, 1) << len;
    EXPECT_GE(part.size(), prev) << len;
    prev = part.size();
  }
  EXPECT_EQ(prev, 16u);
  ReaderStats stats;
  auto junk = SystemMetricsReader::ParseFile(
      "{\"Type\":\"cpu\",\"Dimension\":\"X\",\"Value\":\"high\",\"Timestamp\":1}\n"
      "{\"Type\":\"cpu\",\"Dimension\":\"X\",\"Value\":1}\n"
      "[1]\n\n\n{\"Type\":\"cpu\",\"Dimension\":\"X\",\"Value\":2,\"Timestamp\":3}\n",
      "f", &stats);
  ASSERT_EQ(junk.size(), 1u);  // Name and NodeId may be absent
  EXPECT_EQ(junk[0].name, "");
  EXPECT_EQ(junk[0].timestamp_us, 3000000);
  EXPECT_EQ(stats.lines_skipped, 3);
}

TEST(TimelineReaderTest, ObjectFormAndBeginEndPairs) {
  ReaderStats stats;
  auto events = TimelineReader::ParseFile(
      R"({"traceEvents":[
        {"name":"process_name","ph":"M","pid":3,"args":{"name":"DataLoaderWorker"}},
        {"name":"process_name","ph":"M","pid":0,"args":{"start_time_since_epoch_in_micros":1000}},
        {"name":"load","ph":"B","pid":3,"tid":1,"ts":10,"args":{"step_num":5}},
        {"name":"inner","ph":"B","pid":3,"tid":1,"ts":12},
        {"ph":"E","pid":3,"tid":1,"ts":15},
        {"ph":"E","pid":3,"tid":1,"ts":40},
        {"ph":"E","pid":3,"tid":2,"ts":41},
        {"name":"c","ph":"C","pid":3,"ts":5,"args":{"v":1}}]})",
      "node", "model_timeline.json", "obj", &stats);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].name, "inner");
  EXPECT_EQ(events[0].start_us, 1012);
  EXPECT_EQ(events[0].dur_us, 3);
  EXPECT_EQ(events[1].name, "load");
  EXPECT_EQ(events[1].start_us, 1010);
  EXPECT_EQ(events[1].dur_us, 30);
  EXPECT_EQ(events[1].step, 5);
  EXPECT_EQ(events[1].phase, "DataLoaderWorker");
  EXPECT_EQ(events[1].file_suffix, "model_timeline.json");
}

TEST(TimelineReaderTest, OurWriterAndSmdebugFilesSideBySide) {
  test_util::TempDir dir;
  std::filesystem::copy(kSmdTrial, dir.path(), std::filesystem::copy_options::recursive);
  TimelineWriterOptions o;
  o.node_id = "algo-2";
  o.flush_interval_millis = 0;
  auto w = TimelineWriter::Create(Env::Default(), dir.path(), o);
  ASSERT_TRUE(w.ok());
  (*w)->Record("Step:ModeKeys.TRAIN", "Step", kT0 + 7, 100, {{"step_num", 0}});
  ASSERT_TRUE((*w)->Close().ok());
  TimelineReader reader(Env::Default(), dir.path());
  auto events = reader.GetEvents(kT0, kT0 + 10);
  ASSERT_TRUE(events.ok());
  std::set<std::string> nodes;
  for (const auto& e : *events) nodes.insert(e.node_id);
  EXPECT_EQ(nodes, (std::set<std::string>{"4092-vm", "algo-2"}));
  auto step0 = reader.GetStepTimeRange(0, 1);
  ASSERT_TRUE(step0.ok());
  EXPECT_EQ(step0->start_us, kT0);  // the earliest step-0 event over both nodes
}

}  // namespace
}  // namespace trainscope
