// TimelineWriter: layout, valid JSON arrays, rotation rules under an injected clock, concurrency,
// failure, ScopedSpan; files read back with TimelineReader.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "trainscope/metrics_reader.h"
#include "trainscope/timeline.h"

namespace trainscope {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr uint64_t kT0 = 1704110400ull * 1000000;  // 2024-01-01 12:00:00 UTC
constexpr uint64_t kSec = 1000000;

struct Fixture {
  std::unique_ptr<Env> mem = NewMemEnv();
  Env* env = mem.get();
  std::atomic<uint64_t> now{kT0};
  std::vector<std::string> reports;
  std::unique_ptr<TimelineWriter> writer;

  explicit Fixture(TimelineWriterOptions o = {}, Env* use_env = nullptr) {
    if (use_env) env = use_env;
    o.node_id = "algo-1-77";
    o.start_time_us = kT0;
    o.clock = [this] { return now.load(); };
    o.flush_interval_millis = 0;  // the test drives Flush
    o.report = [this](std::string_view m) { reports.emplace_back(m); };
    auto w = TimelineWriter::Create(env, "/trial", o);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    writer = std::move(w).value();
  }
  json Parse(const std::string& rel) {
    auto text = env->ReadFile("/trial/" + rel);
    EXPECT_TRUE(text.ok()) << rel;
    return json::parse(text.ok() ? *text : std::string("null"));  // throws if not valid JSON
  }
};

TEST(TimelineWriterTest, WritesSmdebugLayoutAsAValidJsonArray) {
  Fixture f;
  f.writer->Record("Step:ModeKeys.TRAIN", "Step", kT0 + 100, 5000,
                   {{"step_num", "3"}, {"pid", 4242}, {"mode", "TRAIN"}});
  f.writer->Record("Forward", "model.forward", kT0 + 200, 1500, {{"step_num", "3"}});
  f.writer->Record("Step:ModeKeys.TRAIN", "Step", kT0 + 5200, 4000,
                   {{"step_num", "4"}, {"loss", 0.25}, {"ok", true}});
  f.writer->RecordInstant("Step:ModeKeys.TRAIN", "checkpoint", kT0 + 9300, {}, 'g');
  ASSERT_TRUE(f.writer->Close().ok());
  EXPECT_EQ(f.writer->events_written(), 4);
  EXPECT_EQ(f.writer->events_dropped(), 0);

  // Named by the end of its last-ending event (5200 + 4000 = 9300 after T0 ... and the instant).
  ASSERT_EQ(f.writer->finished_files().size(), 1u);
  const std::string rel = f.writer->finished_files()[0];
  EXPECT_EQ(rel, "framework/pevents/2024010112/1704110400009300_algo-1-77_pythontimeline.json");
  EXPECT_FALSE(f.env->FileExists("/trial/framework/algo-1-77_pythontimeline.json.tmp"));

  json a = f.Parse(rel);
  ASSERT_TRUE(a.is_array());
  // Metadata first: the time origin, then each phase's process name the first time it is used.
  EXPECT_EQ(a[0]["name"], "process_name");
  EXPECT_EQ(a[0]["ph"], "M");
  EXPECT_EQ(a[0]["pid"], 0);
  EXPECT_EQ(a[0]["args"]["start_time_since_epoch_in_micros"], kT0);
  EXPECT_EQ(a[1]["name"], "process_sort_index");
  EXPECT_EQ(a[2]["args"]["name"], "Step:ModeKeys.TRAIN");
  const int step_pid = a[2]["pid"];
  EXPECT_GE(step_pid, 1);
  json step = a[4];
  EXPECT_EQ(step["ph"], "X");
  EXPECT_EQ(step["name"], "Step");
  EXPECT_EQ(step["pid"], step_pid);
  EXPECT_EQ(step["ts"], 100);  // relative to start_time_since_epoch_in_micros
  EXPECT_EQ(step["dur"], 5000);
  EXPECT_EQ(step["args"]["step_num"], "3");
  EXPECT_EQ(step["args"]["pid"], 4242);
  EXPECT_TRUE(step["tid"].is_number_integer());
  EXPECT_EQ(a[5]["args"]["name"], "Forward");  // new phase: metadata before its first event
  EXPECT_NE(a[5]["pid"], step_pid);
  json last = a.back();
  EXPECT_EQ(last["ph"], "i");
  EXPECT_EQ(last["s"], "g");
  EXPECT_EQ(last["ts"], 9300);
  EXPECT_FALSE(last.contains("dur"));

  TimelineReader reader(f.env, "/trial");
  auto events = reader.GetEvents(0, kTimeMax);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ((*events)[0].start_us, static_cast<int64_t>(kT0 + 100));
  EXPECT_EQ((*events)[0].phase, "Step:ModeKeys.TRAIN");
  EXPECT_EQ((*events)[0].step, 3);
  EXPECT_EQ((*events)[0].node_id, "algo-1-77");
  EXPECT_EQ((*events)[1].phase, "Forward");
  EXPECT_EQ(*(*events)[2].Arg("loss"), "0.25");
  EXPECT_EQ(*(*events)[2].Arg("ok"), "true");
  EXPECT_EQ((*events)[3].ph, 'i');
}

TEST(TimelineWriterTest, RotatesBySizeEachFileValidAndNamedByItsLastEvent) {
  TimelineWriterOptions o;
  o.max_file_size_bytes = 600;
  Fixture f(o);
  for (int i = 0; i < 40; ++i) {
    f.writer->Record(i % 2 ? "Forward" : "Backward", "op" + std::to_string(i), kT0 + i * 1000, 500,
                     {{"step_num", i}});
  }
  ASSERT_TRUE(f.writer->Close().ok());
  auto files = f.writer->finished_files();
  ASSERT_GT(files.size(), 3u);
  size_t events = 0;
  int64_t prev_end = 0;
  for (const std::string& rel : files) {
    json a = f.Parse(rel);
    int64_t max_end = 0;
    bool has_origin = false;
    std::set<int> described, used;
    for (const json& e : a) {
      if (e["ph"] == "M") {
        has_origin |= e["args"].contains("start_time_since_epoch_in_micros");
        if (e["name"] == "process_name") described.insert(e["pid"].get<int>());
        continue;
      }
      ++events;
      used.insert(e["pid"].get<int>());
      max_end = std::max<int64_t>(max_end, kT0 + e["ts"].get<int64_t>() + e["dur"].get<int64_t>());
    }
    EXPECT_TRUE(has_origin) << rel;
    for (int pid : used) EXPECT_TRUE(described.count(pid)) << rel << " pid " << pid;
    auto name = profiler_format::ParseTimelineFileName(Basename(rel));
    ASSERT_TRUE(name.has_value());
    EXPECT_EQ(name->end_us, max_end) << rel;
    EXPECT_GT(max_end, prev_end);
    prev_end = max_end;
  }
  EXPECT_EQ(events, 40u);
}

TEST(TimelineWriterTest, RotatesAfterTheCloseIntervalEvenWithoutNewEvents) {
  TimelineWriterOptions o;
  o.close_interval_seconds = 60;
  Fixture f(o);
  f.writer->Record("Step:ModeKeys.TRAIN", "Step", kT0, 1000, {{"step_num", 1}});
  ASSERT_TRUE(f.writer->Flush().ok());
  EXPECT_TRUE(f.writer->finished_files().empty());  // still open: 0 s old
  f.now = kT0 + 60 * kSec;
  ASSERT_TRUE(f.writer->Flush().ok());
  EXPECT_TRUE(f.writer->finished_files().empty());  // exactly 60 s: not more than the interval
  f.now = kT0 + 61 * kSec;
  ASSERT_TRUE(f.writer->Flush().ok());  // idle: the background thread's periodic call
  ASSERT_EQ(f.writer->finished_files().size(), 1u);
  EXPECT_EQ(f.writer->finished_files()[0],
            "framework/pevents/2024010112/1704110400001000_algo-1-77_pythontimeline.json");
  // An event recorded later goes to a new file, opened now.
  f.writer->Record("Step:ModeKeys.TRAIN", "Step", kT0 + 61 * kSec, 1000, {{"step_num", 2}});
  f.now = kT0 + 100 * kSec;
  ASSERT_TRUE(f.writer->Flush().ok());
  EXPECT_EQ(f.writer->finished_files().size(), 1u);
  ASSERT_TRUE(f.writer->Close().ok());
  ASSERT_EQ(f.writer->finished_files().size(), 2u);
  json second = f.Parse(f.writer->finished_files()[1]);
  EXPECT_EQ(second.back()["args"]["step_num"], 2);
}

TEST(TimelineWriterTest, RotatesWhenAnEventEndsInAnotherUtcHour) {
  Fixture f;
  const uint64_t before = kT0 + 3599 * kSec;  // 12:59:59
  f.now = before;
  f.writer->Record("Forward", "a", before, 500000);            // ends 12:59:59.5
  f.writer->Record("Forward", "b", before + 600000, 500000);   // ends 13:00:00.1
  f.writer->Record("Forward", "c", before + 1200000, 500000);  // ends 13:00:00.7
  ASSERT_TRUE(f.writer->Close().ok());
  auto files = f.writer->finished_files();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0],
            "framework/pevents/2024010112/1704113999500000_algo-1-77_pythontimeline.json");
  EXPECT_EQ(files[1],
            "framework/pevents/2024010113/1704114000700000_algo-1-77_pythontimeline.json");
  EXPECT_EQ(f.Parse(files[1]).size(), 2u + 2u + 2u);  // origin (2), Forward (2), b and c
}

TEST(TimelineWriterTest, ConcurrentRecordersLoseNothing) {
  auto mem = NewMemEnv();
  TimelineWriterOptions o;
  o.node_id = "n1";
  o.flush_interval_millis = 5;  // the background thread flushes while others record
  o.max_file_size_bytes = 20000;
  auto w = TimelineWriter::Create(mem.get(), "/t", o);
  ASSERT_TRUE(w.ok());
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        ScopedSpan span(w->get(), "worker" + std::to_string(t), "op", {{"i", i}});
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ((*w)->events_recorded(), kThreads * kEach);
  EXPECT_EQ((*w)->events_written(), kThreads * kEach);
  TimelineReader reader(mem.get(), "/t");
  auto events = reader.GetEvents(0, kTimeMax);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(reader.stats().lines_skipped, 0);
  std::map<std::string, int> per_phase;
  std::set<int64_t> tids;
  for (const auto& e : *events) {
    ++per_phase[e.phase];
    tids.insert(e.tid);
  }
  EXPECT_EQ(per_phase.size(), static_cast<size_t>(kThreads));
  for (auto& [phase, n] : per_phase) EXPECT_EQ(n, kEach) << phase;
  EXPECT_EQ(tids.size(), static_cast<size_t>(kThreads));  // one track per recording thread
  // Record after Close is dropped, not written.
  (*w)->Record("late", "x", 1, 1);
  EXPECT_EQ((*w)->events_dropped(), 1);
}

TEST(TimelineWriterTest, RecordStepsWritesWhatRecordWouldWithTheRecordingThreadsTid) {
  // The same spans through Record (from the test's thread) and RecordSteps (from another one,
  // flushed on the test's thread): the same events, but for the tid of the recording thread.
  const std::vector<TimelineStepSpan> spans = {
      {"Step:ModeKeys.TRAIN", kT0 + 100, 400, 7, 4242, 7, true, false},
      {"Step:ModeKeys.TRAIN", kT0 + 500, 300, 8, 4242, 8, false, true},
      {"Step:ModeKeys.EVAL", kT0 + 800, 50, -1, 4242, 9, false, false}};
  Fixture by_record, by_steps;
  for (const TimelineStepSpan& s : spans) {
    TimelineArgs args;
    if (s.step >= 0) args.emplace_back("step_num", std::to_string(s.step));
    args.emplace_back("pid", s.pid);
    args.emplace_back("global_step", s.global_step);
    if (!s.phases) args.emplace_back("phases", false);
    if (s.saved) args.emplace_back("saved", true);
    by_record.writer->Record(s.phase, s.phase, s.start_us, s.dur_us, std::move(args));
  }
  std::thread([&] { by_steps.writer->RecordSteps(spans); }).join();
  EXPECT_EQ(by_steps.writer->events_recorded(), 3);
  ASSERT_TRUE(by_record.writer->Close().ok());
  ASSERT_TRUE(by_steps.writer->Close().ok());
  EXPECT_EQ(by_steps.writer->events_written(), 3);
  ASSERT_EQ(by_steps.writer->finished_files(), by_record.writer->finished_files());
  json a = by_record.Parse(by_record.writer->finished_files()[0]);
  json b = by_steps.Parse(by_steps.writer->finished_files()[0]);
  ASSERT_EQ(a.size(), b.size());
  std::set<int64_t> tids;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]["ph"] == "X") {
      EXPECT_NE(a[i]["tid"], b[i]["tid"]) << i;  // each recording thread's own
      tids.insert(b[i]["tid"].get<int64_t>());
      a[i].erase("tid");
      b[i].erase("tid");
    }
    EXPECT_EQ(a[i], b[i]) << i;
  }
  EXPECT_EQ(tids.size(), 1u);
  EXPECT_EQ(b[4]["args"]["step_num"], "7");
  EXPECT_EQ(b.back()["args"]["phases"], false);
  EXPECT_FALSE(b.back()["args"].contains("step_num"));
}

TEST(TimelineWriterTest, RecordStepsCountsTowardTheBufferLimitAndIsDroppedAfterClose) {
  TimelineWriterOptions o;
  o.max_buffered_events = 5;
  Fixture f(o);
  f.writer->Record("Forward", "a", kT0, 10);
  f.writer->Record("Forward", "b", kT0 + 10, 10);
  std::vector<TimelineStepSpan> spans;
  for (int64_t i = 0; i < 4; ++i) {
    spans.push_back(
        {"Step:ModeKeys.TRAIN", kT0 + 100 * static_cast<uint64_t>(i), 100, i, 1, i, true, false});
  }
  f.writer->RecordSteps(spans);  // room for 3
  EXPECT_EQ(f.writer->events_recorded(), 5);
  EXPECT_EQ(f.writer->events_dropped(), 1);
  f.writer->Record("Forward", "c", kT0 + 20, 10);  // full
  EXPECT_EQ(f.writer->events_dropped(), 2);
  ASSERT_TRUE(f.writer->Flush().ok());
  f.writer->RecordSteps(spans);  // the flush made room again, and the buffer is reused
  EXPECT_EQ(f.writer->events_recorded(), 9);
  ASSERT_TRUE(f.writer->Close().ok());
  EXPECT_EQ(f.writer->events_written(), 9);
  f.writer->RecordSteps(spans);
  EXPECT_EQ(f.writer->events_dropped(), 2 + 4);
  TimelineReader reader(f.env, "/trial");
  auto events = reader.GetEvents(0, kTimeMax);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 9u);
  int steps = 0;
  for (const TimelineEvent& e : *events) steps += e.phase == "Step:ModeKeys.TRAIN";
  EXPECT_EQ(steps, 7);
}

TEST(TimelineWriterTest, IoFailuresAreReportedOnceEventsDroppedThenRecordingStops) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  TimelineWriterOptions o;
  o.file_open_fail_threshold = 3;
  Fixture f(o, &env);
  env.SetCreateFails(true);
  for (int round = 0; round < 3; ++round) {
    f.writer->Record("Forward", "x", kT0 + round, 1);
    Status s = f.writer->Flush();
    EXPECT_FALSE(s.ok());
  }
  // One report for the failing open, one saying recording stops.
  ASSERT_EQ(f.reports.size(), 2u) << f.reports[0];
  EXPECT_THAT(f.reports[0], HasSubstr("framework/algo-1-77_pythontimeline.json.tmp"));
  EXPECT_THAT(f.reports[1], HasSubstr("recording stops"));
  EXPECT_EQ(f.writer->events_dropped(), 3);
  env.SetCreateFails(false);
  f.writer->Record("Forward", "y", kT0 + 10, 1);
  EXPECT_EQ(f.writer->events_dropped(), 4);
  EXPECT_EQ(f.writer->events_written(), 0);
  EXPECT_TRUE(f.writer->Close().ok());
}

TEST(TimelineWriterTest, FailedRenameDropsThatFileOnlyAndTheWriterGoesOn) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  Fixture f({}, &env);
  f.writer->Record("Forward", "lost", kT0, 1);
  ASSERT_TRUE(f.writer->Flush().ok());
  env.SetRenameFails(true);
  f.now = kT0 + 120 * kSec;  // idle rotation: the rename fails
  EXPECT_FALSE(f.writer->Flush().ok());
  env.SetRenameFails(false);
  f.writer->Record("Forward", "kept", kT0 + 120 * kSec, 1);
  ASSERT_TRUE(f.writer->Close().ok());
  EXPECT_EQ(f.writer->events_dropped(), 1);
  EXPECT_EQ(f.writer->events_written(), 1);
  ASSERT_EQ(f.writer->finished_files().size(), 1u);
  EXPECT_FALSE(env.FileExists("/trial/framework/algo-1-77_pythontimeline.json.tmp"));
  EXPECT_EQ(f.reports.size(), 1u);
}

TEST(TimelineWriterTest, ScopedSpanMeasuresItsLifetimeWithTheWritersClock) {
  Fixture f;
  f.now = kT0 + 5 * kSec;
  {
    ScopedSpan span(f.writer.get(), "DataLoaderIter", "next", {{"step_num", 7}});
    span.AddArg({"batch", 32});
    f.now = kT0 + 5 * kSec + 1234;
  }
  { ScopedSpan nothing(nullptr, "x", "y"); }  // a null writer is a no-op
  ASSERT_TRUE(f.writer->Close().ok());
  TimelineReader reader(f.env, "/trial");
  auto events = reader.GetEvents(0, kTimeMax);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].start_us, static_cast<int64_t>(kT0 + 5 * kSec));
  EXPECT_EQ((*events)[0].dur_us, 1234);
  EXPECT_EQ((*events)[0].step, 7);
  EXPECT_EQ(*(*events)[0].Arg("batch"), "32");
}

TEST(TimelineWriterTest, RejectsNodeIdsThatBreakTheFileName) {
  auto mem = NewMemEnv();
  TimelineWriterOptions o;
  o.node_id = "rank_0";
  auto w = TimelineWriter::Create(mem.get(), "/t", o);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(w.status().message(), HasSubstr("rank_0"));
  o.node_id = "";  // default: "<pid>-<hostname>", '_' replaced
  o.flush_interval_millis = 0;
  auto d = TimelineWriter::Create(mem.get(), "/t", o);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->node_id().find('_'), std::string::npos);
  EXPECT_EQ((*d)->node_id().rfind(std::to_string(getpid()) + "-", 0), 0u);
}

}  // namespace
}  // namespace trainscope
