// StepTracker: smdebug's completeness rules, has_passed_step and the mode mapping.
#include <gtest/gtest.h>

#include "store/step_tracker.h"

namespace trainscope {
namespace {

using V = std::vector<int64_t>;

TEST(StepTrackerTest, SingleWorkerStepsAreCompleteAtOnce) {
  StepTracker t(1, 1000);
  for (int64_t s : {0, 2, 4}) t.AddWorkerStep(s, Mode::kTrain, s);
  t.ApplyWindow();
  EXPECT_EQ(t.Steps(Mode::kGlobal, false), (V{0, 2, 4}));
  EXPECT_EQ(t.last_complete_step(), 4);
  EXPECT_EQ(t.HasPassedStep(2, Mode::kGlobal), StepState::kAvailable);
  // A skipped step below the last complete step will never come.
  EXPECT_EQ(t.HasPassedStep(1, Mode::kGlobal), StepState::kUnavailable);
  // Beyond every known step: not yet, until the job ends.
  EXPECT_EQ(t.HasPassedStep(5, Mode::kGlobal), StepState::kNotYetAvailable);
  t.SetLoadedAll();
  EXPECT_EQ(t.HasPassedStep(5, Mode::kGlobal), StepState::kUnavailable);
}

TEST(StepTrackerTest, ModesAndModeSteps) {
  // 6 TRAIN steps then 3 EVAL steps, saved every 2 steps of each mode.
  StepTracker t(1, 1000);
  t.AddWorkerStep(0, Mode::kTrain, 0);
  t.AddWorkerStep(2, Mode::kTrain, 2);
  t.AddWorkerStep(4, Mode::kTrain, 4);
  t.AddWorkerStep(6, Mode::kEval, 0);
  t.AddWorkerStep(8, Mode::kEval, 2);
  EXPECT_EQ(t.Steps(Mode::kGlobal, false), (V{0, 2, 4, 6, 8}));
  EXPECT_EQ(t.Steps(Mode::kTrain, false), (V{0, 2, 4}));
  EXPECT_EQ(t.Steps(Mode::kEval, false), (V{0, 2}));
  EXPECT_EQ(t.Steps(Mode::kPredict, false), V{});
  EXPECT_EQ(t.Modes(), (std::vector<Mode>{Mode::kTrain, Mode::kEval}));
  EXPECT_EQ(t.GlobalStep(Mode::kEval, 2), 8);
  EXPECT_EQ(t.GlobalStep(Mode::kGlobal, 6), 6);
  EXPECT_FALSE(t.GlobalStep(Mode::kEval, 4).has_value());
  EXPECT_FALSE(t.GlobalStep(Mode::kGlobal, 7).has_value());
  auto m = t.ModeOf(6);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->first, Mode::kEval);
  EXPECT_EQ(m->second, 0);
  EXPECT_EQ(t.HasPassedStep(2, Mode::kEval), StepState::kAvailable);
  EXPECT_EQ(t.HasPassedStep(1, Mode::kEval), StepState::kUnavailable);
  EXPECT_EQ(t.HasPassedStep(3, Mode::kEval), StepState::kNotYetAvailable);
}

TEST(StepTrackerTest, TwoWorkersOneLagging) {
  StepTracker t(2, 1000);
  for (int64_t s : {0, 2, 4, 6}) t.AddWorkerStep(s, Mode::kTrain, s);  // worker_0
  for (int64_t s : {0, 2}) t.AddWorkerStep(s, Mode::kTrain, s);        // worker_1
  t.ApplyWindow();
  EXPECT_EQ(t.last_complete_step(), 2);
  EXPECT_EQ(t.Steps(Mode::kGlobal, false), (V{0, 2}));
  EXPECT_EQ(t.Steps(Mode::kGlobal, true), (V{0, 2, 4, 6}));
  EXPECT_EQ(t.Steps(Mode::kTrain, false), (V{0, 2}));
  EXPECT_EQ(t.HasPassedStep(2, Mode::kGlobal), StepState::kAvailable);
  EXPECT_EQ(t.HasPassedStep(4, Mode::kGlobal), StepState::kNotYetAvailable);
  EXPECT_EQ(t.HasPassedStep(1, Mode::kGlobal), StepState::kUnavailable);
  // Step 3: the next known step (4) is not complete, so 3 might still come from worker_1.
  EXPECT_EQ(t.HasPassedStep(3, Mode::kGlobal), StepState::kNotYetAvailable);
  EXPECT_EQ(t.HasPassedStep(7, Mode::kGlobal), StepState::kNotYetAvailable);
  EXPECT_FALSE(t.IsComplete(4));
  // worker_1 catches up on step 4: steps up to 4 complete.
  t.AddWorkerStep(4, Mode::kTrain, 4);
  EXPECT_EQ(t.last_complete_step(), 4);
  EXPECT_EQ(t.HasPassedStep(4, Mode::kGlobal), StepState::kAvailable);
  EXPECT_EQ(t.HasPassedStep(3, Mode::kGlobal), StepState::kUnavailable);
  // The job ends with worker_1 never writing 6: every known step is complete.
  t.SetLoadedAll();
  EXPECT_EQ(t.last_complete_step(), 6);
  EXPECT_EQ(t.Steps(Mode::kGlobal, false), (V{0, 2, 4, 6}));
  EXPECT_EQ(t.HasPassedStep(6, Mode::kGlobal), StepState::kAvailable);
  EXPECT_EQ(t.HasPassedStep(7, Mode::kGlobal), StepState::kUnavailable);
}

TEST(StepTrackerTest, WorkerThatSkipsAStepDoesNotBlockLaterSteps) {
  StepTracker t(2, 1000);
  t.AddWorkerStep(0, Mode::kTrain, 0);  // worker_0 only
  t.AddWorkerStep(1, Mode::kTrain, 1);  // both
  t.AddWorkerStep(1, Mode::kTrain, 1);
  EXPECT_EQ(t.last_complete_step(), 1);
  EXPECT_TRUE(t.IsComplete(0));
  EXPECT_EQ(t.HasPassedStep(0, Mode::kGlobal), StepState::kAvailable);
}

TEST(StepTrackerTest, IncompleteStepWindowMovesLastCompleteStep) {
  // worker_1 never writes: 30 steps pend with a window of 10; the oldest half of the window is
  // marked complete until at most 10 steps wait.
  StepTracker t(2, 10);
  for (int64_t s = 0; s < 30; ++s) t.AddWorkerStep(s, Mode::kTrain, s);
  EXPECT_EQ(t.last_complete_step(), -1);
  t.ApplyWindow();
  EXPECT_EQ(t.last_complete_step(), 19);
  EXPECT_EQ(t.Steps(Mode::kGlobal, false).size(), 20u);
  EXPECT_EQ(t.Steps(Mode::kGlobal, true).size(), 30u);
  // Sparse steps count as steps, not as step numbers.
  StepTracker sparse(2, 4);
  for (int64_t s = 0; s < 100; s += 10) sparse.AddWorkerStep(s, Mode::kGlobal, s);
  sparse.ApplyWindow();
  // 10 pending > 4: jump 2 steps at a time until 4 pend: 6 steps marked complete (0..50).
  EXPECT_EQ(sparse.last_complete_step(), 50);
}

TEST(StepTrackerTest, EmptyTracker) {
  StepTracker t(3, 1000);
  EXPECT_TRUE(t.Steps(Mode::kGlobal, true).empty());
  EXPECT_EQ(t.HasPassedStep(0, Mode::kGlobal), StepState::kNotYetAvailable);
  t.SetLoadedAll();
  EXPECT_EQ(t.last_complete_step(), -1);
  EXPECT_EQ(t.HasPassedStep(0, Mode::kGlobal), StepState::kUnavailable);
}

}  // namespace
}  // namespace trainscope
