// Trial semantics on trials written by TrialWriter: modes and mode steps, multi-worker
// completeness, has_passed_step, the end marker, names and filters, reductions, shapes and the
// error codes that stand for smdebug's exceptions.
#include <gtest/gtest.h>

#include <cmath>

#include "trainscope/trial.h"
#include "trainscope/writer.h"
#include "trial_test_util.h"

namespace trainscope {
namespace {

using testing::CollectionsJson;
using testing::FastOptions;
using testing::FloatView;
using testing::OpenWriter;
using testing::Pattern;
using V = std::vector<int64_t>;

bool StartsWith(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

class TrialSemanticsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Env> env_ = NewMemEnv();
  const std::string dir_ = "/trial";

  std::unique_ptr<Trial> Open(TrialOptions o) {
    auto t = Trial::Open(dir_, o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : nullptr;
  }
  std::unique_ptr<Trial> Open() { return Open(FastOptions(env_.get())); }
};

// 6 TRAIN steps then 3 EVAL steps, saving every 2nd step of each mode.
TEST_F(TrialSemanticsTest, ModesAndModeSteps) {
  auto w = OpenWriter(env_.get(), dir_);
  int64_t global = 0;
  for (auto [mode, count] : {std::pair{Mode::kTrain, 6}, std::pair{Mode::kEval, 3}}) {
    for (int64_t ms = 0; ms < count; ++ms, ++global) {
      if (ms % 2 != 0) continue;
      ASSERT_TRUE(w->BeginStep(global, mode, ms).ok());
      auto v = Pattern(global, 4, 0);
      ASSERT_TRUE(
          w->AddTensor(mode == Mode::kTrain ? "fc.weight" : "eval_only", FloatView(v)).ok());
      ASSERT_TRUE(w->AddTensor("loss", FloatView(v)).ok());
      ASSERT_TRUE(w->EndStep().ok());
    }
  }
  ASSERT_TRUE(w->WriteCollections(CollectionsJson(1)).ok());
  ASSERT_TRUE(w->Close().ok());
  auto t = Open();
  EXPECT_EQ(t->Steps(), (V{0, 2, 4, 6, 8}));
  EXPECT_EQ(t->Steps(Mode::kTrain), (V{0, 2, 4}));
  EXPECT_EQ(t->Steps(Mode::kEval), (V{0, 2}));
  EXPECT_TRUE(t->Steps(Mode::kPredict).empty());
  EXPECT_EQ(t->Modes(), (std::vector<Mode>{Mode::kTrain, Mode::kEval}));
  EXPECT_EQ(*t->ModeOf(8), Mode::kEval);
  EXPECT_EQ(*t->ModeStep(8), 2);
  EXPECT_EQ(*t->GlobalStep(Mode::kEval, 2), 8);
  EXPECT_EQ(*t->GlobalStep(Mode::kTrain, 4), 4);
  EXPECT_EQ(t->GlobalStep(Mode::kEval, 1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*t->TensorSteps("loss", Mode::kEval), (V{0, 2}));
  EXPECT_EQ(*t->TensorSteps("loss"), (V{0, 2, 4, 6, 8}));
  EXPECT_EQ(*t->TensorSteps("fc.weight", Mode::kEval), V{});
  // Mode steps address values: EVAL step 2 is global step 8.
  auto v = t->Value("loss", 2, Mode::kEval);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(testing::Floats(*v), Pattern(8, 4, 0));
  EXPECT_EQ(*t->TensorNames(Mode::kEval), (std::vector<std::string>{"eval_only", "loss"}));
  EXPECT_EQ(*t->TensorNames(Mode::kTrain), (std::vector<std::string>{"fc.weight", "loss"}));
  EXPECT_EQ(*t->TensorNames(Mode::kGlobal, 6), (std::vector<std::string>{"eval_only", "loss"}));
  EXPECT_EQ(*t->TensorNames(Mode::kEval, 0), (std::vector<std::string>{"eval_only", "loss"}));
  EXPECT_TRUE(t->TensorNames(Mode::kEval, 1)->empty());
  EXPECT_TRUE(t->loaded_all_steps());
}

TEST_F(TrialSemanticsTest, NamesRegexAndCollections) {
  auto w = OpenWriter(env_.get(), dir_);
  ASSERT_TRUE(w->BeginStep(0, Mode::kTrain, 0).ok());
  auto v = Pattern(0, 3, 0);
  for (const char* n :
       {"Net_fc1.weight", "Net_fc1.bias", "gradient/Net_fc1.weight", "loss", "relu_output_0"}) {
    ASSERT_TRUE(w->AddTensor(n, FloatView(v)).ok());
  }
  ASSERT_TRUE(w->AddTensor(ReductionTensorName("relu_output_0", {ReductionOp::kMean, false}),
                           TensorView::Scalar(DType::kF32, v.data()))
                  .ok());
  ASSERT_TRUE(w->EndStep().ok());
  ASSERT_TRUE(w->WriteCollections(CollectionsJson(1)).ok());
  ASSERT_TRUE(w->Close().ok());
  auto t = Open();
  EXPECT_EQ(*t->TensorNames(),
            (std::vector<std::string>{"Net_fc1.bias", "Net_fc1.weight", "gradient/Net_fc1.weight",
                                      "loss", "relu_output_0"}));
  // Search semantics (re.search): "weight" matches anywhere; anchors work.
  EXPECT_EQ(*t->TensorNames(Mode::kGlobal, std::nullopt, "weight"),
            (std::vector<std::string>{"Net_fc1.weight", "gradient/Net_fc1.weight"}));
  EXPECT_EQ(*t->TensorNames(Mode::kGlobal, std::nullopt, "^(?!gradient).*weight"),
            (std::vector<std::string>{"Net_fc1.weight"}));
  EXPECT_EQ(*t->TensorNames(Mode::kGlobal, std::nullopt, "", "losses"),
            (std::vector<std::string>{"loss"}));
  EXPECT_EQ(*t->TensorNames(Mode::kGlobal, std::nullopt, "", "weights"),
            (std::vector<std::string>{"Net_fc1.weight", "gradient/Net_fc1.weight"}));
  EXPECT_EQ(t->TensorNames(Mode::kGlobal, std::nullopt, "(", "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(t->TensorNames(Mode::kGlobal, std::nullopt, "a", "weights").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(t->TensorNames(Mode::kGlobal, std::nullopt, "", "nope").status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(t->HasTensor("relu_output_0"));
  EXPECT_FALSE(t->HasTensor("smdebug/reductions/mean/relu_output_0"));
  EXPECT_EQ(t->workers(), (std::vector<std::string>{"worker_0"}));
  EXPECT_EQ(t->num_workers(), 1);
  ASSERT_EQ(t->collections().size(), 2u);
  auto losses = t->collection("losses");
  ASSERT_TRUE(losses.has_value());
  EXPECT_EQ(losses->tensor_names, (std::vector<std::string>{"loss"}));
  EXPECT_FALSE(losses->save_histogram);
  EXPECT_EQ(t->name(), "trial");
}

TEST_F(TrialSemanticsTest, ReductionsSavedAndComputed) {
  auto w = OpenWriter(env_.get(), dir_);
  ASSERT_TRUE(w->BeginStep(0, Mode::kTrain, 0).ok());
  std::vector<float> x = {-3, 1, 2};
  ASSERT_TRUE(w->AddTensor("x", FloatView(x)).ok());
  // A saved reduction whose value differs from the computed one shows which was used.
  const float saved_mean = 42;
  ASSERT_TRUE(w->AddTensor(ReductionTensorName("x", {ReductionOp::kMean, false}),
                           TensorView::Scalar(DType::kF32, &saved_mean))
                  .ok());
  const double saved_abs_max = 3;
  ASSERT_TRUE(w->AddTensor(ReductionTensorName("only_reduced", {ReductionOp::kMax, true}),
                           TensorView::Scalar(DType::kF64, &saved_abs_max))
                  .ok());
  ASSERT_TRUE(w->EndStep().ok());
  ASSERT_TRUE(w->WriteCollections(CollectionsJson(1)).ok());
  ASSERT_TRUE(w->Close().ok());
  auto t = Open();
  EXPECT_EQ(*t->ReductionValue("x", 0, {ReductionOp::kMean, false}), 42.0);
  EXPECT_EQ(*t->ReductionValue("x", 0, {ReductionOp::kMin, false}), -3.0);
  EXPECT_EQ(*t->ReductionValue("x", 0, {ReductionOp::kL1, false}), 6.0);
  EXPECT_DOUBLE_EQ(*t->ReductionValue("x", 0, {ReductionOp::kVariance, false}),
                   (std::pow(-3.0, 2) + 1 + 4) / 3 - 0);  // mean 0: population variance
  auto saved = t->SavedReductions("x", 0);
  ASSERT_TRUE(saved.ok());
  ASSERT_EQ(saved->size(), 1u);
  EXPECT_EQ((*saved)[0].first, (Reduction{ReductionOp::kMean, false}));
  EXPECT_EQ((*saved)[0].second, 42.0);
  EXPECT_EQ(*t->ReductionValue("only_reduced", 0, {ReductionOp::kMax, true}), 3.0);
  auto raw = t->Value("only_reduced", 0);
  EXPECT_EQ(raw.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(raw.status().message(), "TensorUnavailableForStep:"));
  EXPECT_NE(raw.status().message().find("has_reductions=true"), std::string::npos);
  // The bindings raise smdebug's class from the detail and its subject, not from the message.
  EXPECT_EQ(raw.status().detail(), ErrorDetail::kTensorUnavailableForStep);
  EXPECT_EQ(raw.status().subject().tensor, "only_reduced");
  EXPECT_EQ(raw.status().subject().step, 0);
  EXPECT_EQ(raw.status().subject().mode, Mode::kGlobal);
  EXPECT_TRUE(raw.status().subject().has_reductions);
  auto nored = t->ReductionValue("only_reduced", 0, {ReductionOp::kMin, false});
  EXPECT_TRUE(StartsWith(nored.status().message(), "TensorUnavailableForStep:"));
  EXPECT_EQ(nored.status().detail(), ErrorDetail::kTensorUnavailableForStep);
  EXPECT_TRUE(nored.status().subject().has_reductions);
  auto no_shape = t->Shape("only_reduced", 0);
  EXPECT_EQ(no_shape.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(no_shape.status().detail(), ErrorDetail::kShapeUnavailableForStep);
  EXPECT_EQ(no_shape.status().subject().tensor, "only_reduced");
}

// smdebug's save_shape bug: a shape entry replaced the value's location. Here both read.
TEST_F(TrialSemanticsTest, SavedShapeDoesNotHideValue) {
  auto w = OpenWriter(env_.get(), dir_);
  ASSERT_TRUE(w->BeginStep(0, Mode::kTrain, 0).ok());
  auto x = Pattern(0, 6, 0);
  ASSERT_TRUE(w->AddTensor("x", FloatView(x, {2, 3})).ok());
  ASSERT_TRUE(w->AddShape("x", {2, 3}).ok());
  ASSERT_TRUE(w->AddShape("shape_only", {7, 1, 5}).ok());
  ASSERT_TRUE(w->EndStep().ok());
  ASSERT_TRUE(w->WriteCollections(CollectionsJson(1)).ok());
  ASSERT_TRUE(w->Close().ok());
  auto t = Open();
  auto v = t->Value("x", 0);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(testing::Floats(*v), x);
  EXPECT_EQ(*t->Shape("x", 0), (V{2, 3}));
  EXPECT_EQ(*t->Shape("shape_only", 0), (V{7, 1, 5}));
  auto no_value = t->Value("shape_only", 0);
  EXPECT_TRUE(StartsWith(no_value.status().message(), "TensorUnavailableForStep:"));
  EXPECT_NE(no_value.status().message().find("has_reductions=false"), std::string::npos);
  EXPECT_EQ(no_value.status().detail(), ErrorDetail::kTensorUnavailableForStep);
  EXPECT_FALSE(no_value.status().subject().has_reductions);
  EXPECT_EQ(*t->TensorNames(), (std::vector<std::string>{"shape_only", "x"}));
}

void WriteSteps(Env* env, const std::string& dir, const std::string& worker,
                const std::vector<int64_t>& steps, int num_workers, bool end_marker) {
  auto w = OpenWriter(env, dir, worker, end_marker);
  ASSERT_NE(w, nullptr);
  for (int64_t s : steps) {
    ASSERT_TRUE(w->BeginStep(s, Mode::kTrain, s).ok());
    auto v = Pattern(s, 4, worker == "worker_0" ? 0.0f : 0.25f);
    ASSERT_TRUE(w->AddTensor("w", FloatView(v)).ok());
    ASSERT_TRUE(w->EndStep().ok());
  }
  ASSERT_TRUE(w->WriteCollections(CollectionsJson(num_workers)).ok());
  ASSERT_TRUE(w->Close().ok());
}

TEST_F(TrialSemanticsTest, TwoWorkersOneLaggingThenEnd) {
  WriteSteps(env_.get(), dir_, "worker_0", {0, 2, 4, 6}, 2, false);
  WriteSteps(env_.get(), dir_, "worker_1", {0, 2}, 2, false);
  auto t = Open();
  EXPECT_EQ(t->workers(), (std::vector<std::string>{"worker_0", "worker_1"}));
  EXPECT_EQ(t->Steps(), (V{0, 2}));
  EXPECT_EQ(t->Steps(Mode::kGlobal, true), (V{0, 2, 4, 6}));
  EXPECT_EQ(t->last_complete_step(), 2);
  EXPECT_EQ(t->HasPassedStep(2), StepState::kAvailable);
  EXPECT_EQ(t->HasPassedStep(1), StepState::kUnavailable);
  EXPECT_EQ(t->HasPassedStep(3), StepState::kNotYetAvailable);
  EXPECT_EQ(t->HasPassedStep(4), StepState::kNotYetAvailable);
  EXPECT_EQ(t->HasPassedStep(100), StepState::kNotYetAvailable);
  EXPECT_EQ(*t->TensorSteps("w"), (V{0, 2}));
  EXPECT_EQ(*t->TensorSteps("w", Mode::kGlobal, true), (V{0, 2, 4, 6}));
  EXPECT_EQ(*t->TensorWorkers("w", 2), (std::vector<std::string>{"worker_0", "worker_1"}));
  EXPECT_EQ(*t->TensorWorkers("w", 4), (std::vector<std::string>{"worker_0"}));
  // Values of either worker; the default is the first worker by name.
  EXPECT_EQ(testing::Floats(*t->Value("w", 2)), Pattern(2, 4, 0.0f));
  EXPECT_EQ(testing::Floats(*t->Value("w", 2, Mode::kGlobal, "worker_1")), Pattern(2, 4, 0.25f));
  auto bad = t->Value("w", 4, Mode::kGlobal, "worker_1");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(StartsWith(bad.status().message(), "InvalidWorker:"));
  EXPECT_EQ(bad.status().detail(), ErrorDetail::kInvalidWorker);
  EXPECT_EQ(bad.status().subject().worker, "worker_1");
  EXPECT_EQ(bad.status().subject().step, 4);
  // A value present in an incomplete step still reads (as in smdebug).
  EXPECT_TRUE(t->Value("w", 6).ok());
  // Missing steps map to smdebug's exceptions.
  auto skipped = t->Value("w", 1);
  EXPECT_EQ(skipped.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(skipped.status().message(), "StepUnavailable:"));
  EXPECT_EQ(skipped.status().detail(), ErrorDetail::kStepUnavailable);
  EXPECT_EQ(skipped.status().subject().step, 1);
  auto future = t->Value("w", 8);
  EXPECT_EQ(future.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(StartsWith(future.status().message(), "StepNotYetAvailable:"));
  EXPECT_EQ(future.status().detail(), ErrorDetail::kStepNotYetAvailable);
  EXPECT_EQ(future.status().subject().step, 8);
  // A mode query's subject is the step as asked: a mode step, with its mode.
  auto train_future = t->Value("w", 8, Mode::kTrain);
  EXPECT_EQ(train_future.status().detail(), ErrorDetail::kStepNotYetAvailable)
      << train_future.status().ToString();
  EXPECT_EQ(train_future.status().subject().step, 8);
  EXPECT_EQ(train_future.status().subject().mode, Mode::kTrain);
  auto unknown = t->Value("nope", 0);
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(unknown.status().message(), "TensorUnavailable:"));
  EXPECT_EQ(unknown.status().detail(), ErrorDetail::kTensorUnavailable);
  EXPECT_EQ(unknown.status().subject().tensor, "nope");
  EXPECT_EQ(t->TensorSteps("nope").status().detail(), ErrorDetail::kTensorUnavailable);
  EXPECT_FALSE(t->loaded_all_steps());
  EXPECT_FALSE(t->training_ended());

  // The job ends (worker_1 never writes 4 and 6): every step becomes complete.
  ASSERT_TRUE(WriteEndOfJob(env_.get(), dir_).ok());
  EXPECT_TRUE(t->training_ended());
  EXPECT_EQ(t->Steps(), (V{0, 2, 4, 6}));
  EXPECT_TRUE(t->loaded_all_steps());
  EXPECT_EQ(t->last_complete_step(), 6);
  EXPECT_EQ(t->HasPassedStep(4), StepState::kAvailable);
  EXPECT_EQ(t->HasPassedStep(100), StepState::kUnavailable);
  auto after = t->Value("w", 8);
  EXPECT_EQ(after.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(after.status().message(), "StepUnavailable:"));
  EXPECT_EQ(after.status().detail(), ErrorDetail::kStepUnavailable);
}

TEST_F(TrialSemanticsTest, StepsOfALaggingWorkerAreNotYetAvailable) {
  WriteSteps(env_.get(), dir_, "worker_0", {0, 2}, 2, false);
  WriteSteps(env_.get(), dir_, "worker_1", {0}, 2, false);
  auto t = Open();
  EXPECT_EQ(t->Steps(), (V{0}));
  EXPECT_TRUE(t->Value("w", 2).ok());  // worker_0's value is there already
  auto v = t->Value("w", 2, Mode::kGlobal, "worker_1");
  EXPECT_TRUE(StartsWith(v.status().message(), "InvalidWorker:")) << v.status().ToString();
  auto later = t->Value("w", 4);
  EXPECT_TRUE(StartsWith(later.status().message(), "StepNotYetAvailable:"))
      << later.status().ToString();
}

TEST_F(TrialSemanticsTest, IncompleteStepWindow) {
  std::vector<int64_t> steps;
  for (int64_t s = 0; s < 40; ++s) steps.push_back(s);
  WriteSteps(env_.get(), dir_, "worker_0", steps, 2, false);
  WriteSteps(env_.get(), dir_, "worker_1", {}, 2, false);
  TrialOptions o = FastOptions(env_.get());
  o.incomplete_step_window = 10;
  auto t = Open(o);
  // 40 steps wait for worker_1; half-windows are marked complete until at most 10 wait.
  EXPECT_EQ(t->Steps().size(), 30u);
  EXPECT_EQ(t->last_complete_step(), 29);
  EXPECT_EQ(t->HasPassedStep(29), StepState::kAvailable);
  EXPECT_EQ(t->HasPassedStep(30), StepState::kNotYetAvailable);
}

TEST_F(TrialSemanticsTest, RangeOfSteps) {
  WriteSteps(env_.get(), dir_, "worker_0", {0, 1, 2, 3, 4, 5}, 1, true);
  TrialOptions o = FastOptions(env_.get());
  o.range_begin = 2;
  o.range_end = 5;
  auto t = Open(o);
  EXPECT_EQ(t->Steps(), (V{2, 3, 4}));
  o.range_end = 1;
  EXPECT_EQ(Trial::Open(dir_, o).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TrialSemanticsTest, OpenErrors) {
  EXPECT_EQ(Trial::Open("/nowhere", FastOptions(env_.get())).status().code(),
            StatusCode::kNotFound);
  ASSERT_TRUE(env_->CreateDirs(dir_).ok());
  auto early = Trial::Open(dir_, FastOptions(env_.get()));
  EXPECT_EQ(early.status().code(), StatusCode::kUnavailable);
  auto waited = Trial::OpenWhenReady(dir_, FastOptions(env_.get()), std::chrono::milliseconds(30),
                                     std::chrono::milliseconds(5));
  EXPECT_EQ(waited.status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(WriteEndOfJob(env_.get(), dir_).ok());
  auto none = Trial::OpenWhenReady(dir_, FastOptions(env_.get()));
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(none.status().message(), "MissingCollectionFiles:"));
  EXPECT_EQ(none.status().detail(), ErrorDetail::kMissingCollectionFiles);
  EXPECT_NE(none.status().message().find("no debugging data was saved"), std::string::npos);
}

TEST_F(TrialSemanticsTest, WaitsForEveryWorkersCollections) {
  WriteSteps(env_.get(), dir_, "worker_0", {0}, 2, false);
  EXPECT_EQ(Trial::Open(dir_, FastOptions(env_.get())).status().code(), StatusCode::kUnavailable);
  WriteSteps(env_.get(), dir_, "worker_1", {0}, 2, false);
  auto t = Trial::Open(dir_, FastOptions(env_.get()));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->num_workers(), 2);
}

}  // namespace
}  // namespace trainscope
