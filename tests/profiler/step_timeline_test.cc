// StepTimeline: one Step span per boundary, its args, the PhaseMinIntervalInMilliseconds
// decision and the kept spans; written through a TimelineWriter and read back as JSON.
#include "trainscope/step_timeline.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainscope/timeline.h"

namespace trainscope {
namespace {

using nlohmann::json;

constexpr uint64_t kT0 = 1704110400ull * 1000000;  // 2024-01-01 12:00:00 UTC

struct Fixture {
  std::unique_ptr<Env> env = NewMemEnv();
  std::unique_ptr<TimelineWriter> writer;

  Fixture() {
    TimelineWriterOptions o;
    o.node_id = "algo-1-77";
    o.start_time_us = kT0;
    o.clock = [] { return kT0; };
    o.flush_interval_millis = 0;
    writer = std::move(TimelineWriter::Create(env.get(), "/trial", o)).value();
  }
  // The complete events written, in order.
  std::vector<json> Events() {
    EXPECT_TRUE(writer->Close().ok());
    std::vector<json> out;
    for (const std::string& rel : writer->finished_files()) {
      for (const json& e : json::parse(*env->ReadFile("/trial/" + rel))) {
        if (e["ph"] == "X") out.push_back(e);
      }
    }
    return out;
  }
};

TEST(StepTimelineTest, EachBoundaryEndsTheStepInProgressAsASpanWithSmdebugsArgs) {
  Fixture f;
  StepTimeline t(f.writer.get(), 4242, 0, 10);
  EXPECT_EQ(t.mode_step(), -1);
  EXPECT_TRUE(t.Begin(kT0 + 100, Mode::kTrain, 0, 0));
  EXPECT_EQ(t.mode_step(), 0);
  EXPECT_TRUE(t.Begin(kT0 + 600, Mode::kTrain, 1, 1));
  t.End(kT0 + 900);  // a mode change
  EXPECT_FALSE(t.in_step());
  EXPECT_EQ(t.mode_step(), -1);
  t.End(kT0 + 950);  // nothing in progress: nothing recorded
  EXPECT_TRUE(t.Begin(kT0 + 1000, Mode::kEval, 0, 2));
  t.End(kT0 + 1200);

  const std::vector<json> e = f.Events();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0]["name"], "Step:ModeKeys.TRAIN");
  EXPECT_EQ(e[0]["ts"], 100);
  EXPECT_EQ(e[0]["dur"], 500);
  EXPECT_EQ(e[0]["args"]["step_num"], "0");  // a string, as smdebug writes it
  EXPECT_EQ(e[0]["args"]["pid"], 4242);
  EXPECT_EQ(e[0]["args"]["global_step"], 0);
  EXPECT_FALSE(e[0]["args"].contains("phases"));
  EXPECT_EQ(e[1]["dur"], 300);
  EXPECT_EQ(e[1]["args"]["step_num"], "1");
  EXPECT_EQ(e[2]["name"], "Step:ModeKeys.EVAL");
  EXPECT_EQ(e[2]["args"]["step_num"], "0");
  EXPECT_EQ(e[2]["args"]["global_step"], 2);
  ASSERT_EQ(t.kept().size(), 3u);
  EXPECT_EQ(t.kept()[2].mode, Mode::kEval);
  EXPECT_EQ(t.kept()[2].start_us, kT0 + 1000);
  EXPECT_EQ(t.kept()[2].dur_us, 200u);
}

TEST(StepTimelineTest, AStepThatSavedTensorsSaysSo) {
  Fixture f;
  StepTimeline t(f.writer.get(), 1, 0, 0);
  t.Begin(kT0 + 100, Mode::kTrain, 0, 0);
  t.Begin(kT0 + 200, Mode::kTrain, 1, 1, /*ended_saved=*/true);  // step 0 saved
  t.Begin(kT0 + 300, Mode::kTrain, 2, 2);
  t.End(kT0 + 400, /*ended_saved=*/true);
  const std::vector<json> e = f.Events();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0]["args"]["saved"], true);  // StepOutlier leaves such steps out
  EXPECT_FALSE(e[1]["args"].contains("saved"));
  EXPECT_EQ(e[2]["args"]["saved"], true);
}

TEST(StepTimelineTest, AStepThatCalledTheModelSeveralTimesSaysHowMany) {
  Fixture f;
  StepTimeline t(f.writer.get(), 1, 0, 0);
  t.Begin(kT0 + 100, Mode::kTrain, 0, 0);
  t.Begin(kT0 + 200, Mode::kTrain, 1, 1, false, /*ended_model_calls=*/187);  // step 0's calls
  t.Begin(kT0 + 300, Mode::kTrain, 2, 2, false, 1);  // one call: nothing to say
  t.End(kT0 + 400, false, 2);
  const std::vector<json> e = f.Events();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0]["args"]["model_calls"], 187);  // StepOutlier judges it per call
  EXPECT_FALSE(e[1]["args"].contains("model_calls"));
  EXPECT_EQ(e[2]["args"]["model_calls"], 2);
}

TEST(StepTimelineTest, PhasesAtMostOncePerPeriodAndStepsWithoutThemSaySo) {
  Fixture f;
  StepTimeline t(f.writer.get(), 1, /*phase_period_us=*/1000, 100);
  std::vector<bool> on;
  for (uint64_t i = 0; i < 10; ++i) {
    on.push_back(
        t.Begin(kT0 + i * 400, Mode::kTrain, static_cast<int64_t>(i), static_cast<int64_t>(i)));
  }
  t.End(kT0 + 4000);
  // Steps begin every 400 us: phases at 0, 1200 (the first >= 1000 after 0), 2400, 3600.
  EXPECT_EQ(on,
            (std::vector<bool>{true, false, false, true, false, false, true, false, false, true}));
  const std::vector<json> e = f.Events();
  ASSERT_EQ(e.size(), 10u);
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(e[i]["args"].contains("phases"), !on[i]) << i;
    if (!on[i]) {
      EXPECT_EQ(e[i]["args"]["phases"], false) << i;
    }
  }
}

TEST(StepTimelineTest, AClockGoingBackRecordsPhasesAgainAndNoNegativeDuration) {
  Fixture f;
  StepTimeline t(f.writer.get(), 1, 1000, 0);
  EXPECT_TRUE(t.Begin(kT0 + 5000, Mode::kTrain, 0, 0));
  EXPECT_FALSE(t.Begin(kT0 + 5500, Mode::kTrain, 1, 1));
  EXPECT_TRUE(t.Begin(kT0 + 2000, Mode::kTrain, 2, 2));  // the wall clock was set back
  t.End(kT0 + 2100);
  const std::vector<json> e = f.Events();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[1]["dur"], 0);
  EXPECT_TRUE(t.kept().empty());  // keep 0: nothing kept
}

TEST(StepTimelineTest, KeepsOnlyTheNewestSpans) {
  Fixture f;
  StepTimeline t(f.writer.get(), 1, 0, 3);
  for (int64_t i = 0; i < 6; ++i) t.Begin(kT0 + static_cast<uint64_t>(i) * 10, Mode::kTrain, i, i);
  t.End(kT0 + 60);
  ASSERT_EQ(t.kept().size(), 3u);
  EXPECT_EQ(t.kept().front().step, 3);
  EXPECT_EQ(t.kept().back().step, 5);
  EXPECT_EQ(f.Events().size(), 6u);  // all written
}

TEST(StepTimelineTest, KeepsTheNewestSpansAcrossBlocksOldestFirst) {
  Fixture f;
  constexpr size_t kKeep = StepTimeline::kKeptBlock + 3;  // a ring over two blocks
  StepTimeline t(f.writer.get(), 1, 0, kKeep);
  StepTimeline::Span last{};
  EXPECT_FALSE(t.last_kept(&last));
  const auto n = static_cast<int64_t>(2 * StepTimeline::kKeptBlock + 5);
  for (int64_t i = 0; i <= n; ++i) {
    t.Begin(kT0 + static_cast<uint64_t>(i) * 10, i % 3 == 0 ? Mode::kEval : Mode::kTrain, i, i);
    if (i == 0) continue;
    ASSERT_TRUE(t.last_kept(&last));
    ASSERT_EQ(last.step, i - 1);
    if (i == static_cast<int64_t>(StepTimeline::kKeptBlock)) {  // the first block full
      const std::vector<StepTimeline::Span> k = t.kept();
      ASSERT_EQ(k.size(), StepTimeline::kKeptBlock);
      for (size_t j = 0; j < k.size(); ++j) ASSERT_EQ(k[j].step, static_cast<int64_t>(j));
    }
  }
  const std::vector<StepTimeline::Span> k = t.kept();  // spans 0 .. n-1 ended; the newest kKeep
  ASSERT_EQ(k.size(), kKeep);
  for (size_t j = 0; j < k.size(); ++j) {
    const int64_t step = n - static_cast<int64_t>(kKeep) + static_cast<int64_t>(j);
    ASSERT_EQ(k[j].step, step) << j;
    EXPECT_EQ(k[j].start_us, kT0 + static_cast<uint64_t>(step) * 10);
    EXPECT_EQ(k[j].dur_us, 10u);
    EXPECT_EQ(k[j].mode, step % 3 == 0 ? Mode::kEval : Mode::kTrain);
  }
}

TEST(StepTimelineTest, SpansReachTheWriterInBatchesAndAllOfThemAtTheEnd) {
  Fixture f;
  {
    StepTimeline t(f.writer.get(), 1, 0, 0);
    for (int64_t i = 0; i < 11; ++i) t.Begin(kT0 + static_cast<uint64_t>(i), Mode::kTrain, i, i);
    EXPECT_EQ(f.writer->events_recorded(), 0);  // 10 ended, within 100 ms: still batched
    t.Begin(kT0 + StepTimeline::kBatchMicros, Mode::kTrain, 11, 11);
    EXPECT_EQ(f.writer->events_recorded(), 11);  // 100 ms after the first: handed over
    for (int64_t i = 12; i < 12 + static_cast<int64_t>(StepTimeline::kBatchSpans) + 1; ++i) {
      t.Begin(kT0 + StepTimeline::kBatchMicros + static_cast<uint64_t>(i), Mode::kTrain, i, i);
    }
    EXPECT_EQ(f.writer->events_recorded(), 11 + static_cast<int64_t>(StepTimeline::kBatchSpans));
    t.Flush();
    EXPECT_EQ(f.writer->events_recorded(), 12 + static_cast<int64_t>(StepTimeline::kBatchSpans));
    t.Begin(kT0 + 2 * StepTimeline::kBatchMicros, Mode::kEval, 0, 100);
    t.Flush();  // the last span ended is handed over; the one in progress is not a span yet
  }
  EXPECT_EQ(f.Events().size(), 13 + StepTimeline::kBatchSpans);
}

}  // namespace
}  // namespace trainscope
