#include "trainscope/hook.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

#include "store/trial_check.h"
#include "trainscope/event_file.h"
#include "trainscope/trial_format.h"

namespace trainscope {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// A float tensor of n elements with values start, start+1, ...
struct FloatTensor {
  std::vector<float> data;
  std::vector<int64_t> shape;
  TensorView view() const { return {DType::kF32, data.data(), shape, {}, {}}; }
};
FloatTensor Make(std::vector<int64_t> shape, float start) {
  FloatTensor t;
  t.shape = std::move(shape);
  t.data.resize(static_cast<size_t>(NumElements(t.shape)));
  std::iota(t.data.begin(), t.data.end(), start);
  return t;
}

class HookTest : public ::testing::Test {
 protected:
  HookTest() : env_(NewMemEnv()) {}

  HookConfig Config() {
    HookConfig c;
    c.out_dir = "/trial";
    c.env = env_.get();
    c.quiet = true;
    c.rank = 0;
    c.world_size = 1;
    return c;
  }
  std::unique_ptr<Hook> MakeHook(HookConfig c) {
    auto h = Hook::Create(std::move(c));
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    return h.ok() ? std::move(h).value() : nullptr;
  }
  std::map<int64_t, testing::ReadStep> Read(const std::string& worker = "worker_0") {
    return testing::ReadTrialChecked(env_.get(), "/trial", worker);
  }
  std::vector<int64_t> Steps(const std::map<int64_t, testing::ReadStep>& t) {
    std::vector<int64_t> out;
    for (const auto& [s, _] : t) out.push_back(s);
    return out;
  }
  bool Ended() { return env_->FileExists("/trial/training_job_end.ts"); }

  std::unique_ptr<Env> env_;
};

TEST_F(HookTest, StepCountersStartAtMinusOneAndFollowModes) {
  auto hook = MakeHook(Config());
  EXPECT_EQ(hook->step(), -1);
  hook->SetMode(Mode::kTrain);
  for (int i = 0; i < 6; ++i) hook->Step();
  EXPECT_EQ(hook->step(), 5);
  EXPECT_EQ(hook->mode_step(), 5);
  hook->SetMode(Mode::kEval);
  hook->Step();
  EXPECT_EQ(hook->step(), 6);       // the global step keeps counting
  EXPECT_EQ(hook->mode_step(), 0);  // EVAL step 0 is global step 6
  hook->Step();
  hook->Step();
  EXPECT_EQ(hook->step(), 8);
  EXPECT_EQ(hook->mode_step(), 2);
  hook->SetMode(Mode::kTrain);
  hook->Step();
  EXPECT_EQ(hook->mode_step(), 6);
  hook->SetMode(Mode::kGlobal);
  hook->Step();
  EXPECT_EQ(hook->mode_step(), hook->step());  // GLOBAL's step is the global step
}

TEST_F(HookTest, SavesWeightsAtTheirIntervalWithModesInTheIndex) {
  HookConfig c = Config();
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 2});
  auto hook = MakeHook(std::move(c));
  FloatTensor w = Make({2, 3}, 1);
  hook->SetMode(Mode::kTrain);
  std::vector<bool> saving;
  for (int i = 0; i < 5; ++i) {
    saving.push_back(hook->Step());
    w.data[0] = static_cast<float>(100 + i);
    ASSERT_TRUE(hook->SaveTensor("Net_fc1.weight", w.view()).ok());
    ASSERT_TRUE(hook->SaveTensor("Net_fc1.bias", w.view()).ok());  // not included
  }
  hook->SetMode(Mode::kEval);
  for (int i = 0; i < 3; ++i) {
    saving.push_back(hook->Step());
    ASSERT_TRUE(hook->SaveTensor("Net_fc1.weight", w.view()).ok());
  }
  ASSERT_TRUE(hook->Close().ok());
  EXPECT_THAT(saving, ElementsAre(true, false, true, false, true, true, false, true));

  auto trial = Read();
  EXPECT_THAT(Steps(trial), ElementsAre(0, 2, 4, 5, 7));
  EXPECT_EQ(trial[2].mode, Mode::kTrain);
  EXPECT_EQ(trial[2].mode_step, 2);
  EXPECT_EQ(trial[7].mode, Mode::kEval);
  EXPECT_EQ(trial[7].mode_step, 2);
  ASSERT_EQ(trial[4].tensors.count("Net_fc1.weight"), 1u);
  EXPECT_EQ(trial[4].tensors.count("Net_fc1.bias"), 0u);
  const auto& t = trial[4].tensors["Net_fc1.weight"];
  EXPECT_EQ(t.dtype, DType::kF32);
  EXPECT_THAT(t.shape, ElementsAre(2, 3));
  float first;
  std::memcpy(&first, t.bytes.data(), sizeof(first));
  EXPECT_EQ(first, 104.0f);  // the value at that step
  EXPECT_TRUE(Ended());
}

TEST_F(HookTest, GradientsAreNeverSavedInEvalOrPredict) {
  HookConfig c = Config();
  c.include_collections = {"gradients", "weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  auto hook = MakeHook(std::move(c));
  FloatTensor g = Make({4}, 0);
  for (Mode m : {Mode::kTrain, Mode::kEval, Mode::kPredict}) {
    hook->SetMode(m);
    EXPECT_TRUE(hook->Step());  // weights are due
    EXPECT_EQ(hook->Plan("gradient/Net_w.weight").save, m == Mode::kTrain) << ModeName(m);
    ASSERT_TRUE(hook->SaveTensor("gradient/Net_w.weight", g.view()).ok());
    ASSERT_TRUE(hook->SaveTensor("Net_w.weight", g.view()).ok());
  }
  ASSERT_TRUE(hook->Close().ok());
  auto trial = Read();
  EXPECT_EQ(trial[0].tensors.count("gradient/Net_w.weight"), 1u);
  EXPECT_EQ(trial[1].tensors.count("gradient/Net_w.weight"), 0u);
  EXPECT_EQ(trial[2].tensors.count("gradient/Net_w.weight"), 0u);
  EXPECT_EQ(trial[2].tensors.count("Net_w.weight"), 1u);
}

TEST_F(HookTest, ReductionsAreWrittenUnderSmdebugNamesWithCoreValues) {
  HookConfig c = Config();
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  c.reduction_config = *ReductionConfig::Parse("mean,l2_norm,abs_max,nan_count");
  auto hook = MakeHook(std::move(c));
  FloatTensor w = Make({3, 5}, -7);
  hook->Step();
  ASSERT_TRUE(hook->SaveTensor("Net_fc.weight", w.view()).ok());
  ASSERT_TRUE(hook->Close().ok());

  auto trial = Read();
  auto& tensors = trial[0].tensors;
  std::vector<std::string> names;
  for (const auto& [n, _] : tensors) names.push_back(n);
  EXPECT_THAT(names, UnorderedElementsAre("smdebug/reductions/mean/Net_fc.weight",
                                          "smdebug/reductions/l2/Net_fc.weight",
                                          "smdebug/reductions/abs_max/Net_fc.weight",
                                          "smdebug/reductions/nan_count/Net_fc.weight"));
  auto stats = ComputeStats(w.view());
  ASSERT_TRUE(stats.ok());
  for (auto [name, r] : {std::pair{"mean", Reduction{ReductionOp::kMean, false}},
                         std::pair{"l2", Reduction{ReductionOp::kL2, false}},
                         std::pair{"abs_max", Reduction{ReductionOp::kMax, true}}}) {
    const auto& t = tensors["smdebug/reductions/" + std::string(name) + "/Net_fc.weight"];
    EXPECT_EQ(t.dtype, DType::kF64);
    EXPECT_TRUE(t.shape.empty());  // 0-d
    double v;
    std::memcpy(&v, t.bytes.data(), sizeof(v));
    EXPECT_EQ(v, stats->Value(r)) << name;
  }
}

TEST_F(HookTest, PlansAreCachedPerNameAndDueCollections) {
  HookConfig c = Config();
  c.include_collections = {"weights", "biases"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  auto hook = MakeHook(std::move(c));
  FloatTensor w = Make({2}, 0);
  for (int i = 0; i < 50; ++i) {
    hook->Step();
    for (const char* n : {"Net_a.weight", "Net_a.bias", "Net_b.weight", "other"}) {
      (void)hook->SaveTensor(n, w.view());
    }
  }
  // One plan per name that saves something; misses for names in no due collection are free.
  EXPECT_EQ(hook->stats().plans_built, 3);
  EXPECT_EQ(hook->stats().tensors_saved, 150);
}

TEST_F(HookTest, ScalarsAreWrittenAtEveryStepAsSmdebugDoes) {
  HookConfig c = Config();  // default: losses every 500 steps
  auto hook = MakeHook(std::move(c));
  ASSERT_TRUE(hook->SaveScalar("early", 1.5).ok());  // before the first step: lands in step 0
  hook->Step();
  hook->Step();
  EXPECT_FALSE(hook->is_saving_step());
  ASSERT_TRUE(hook->SaveScalar("lr", 0.25).ok());
  ASSERT_TRUE(hook->Close().ok());
  auto trial = Read();
  EXPECT_THAT(Steps(trial), ElementsAre(0, 1));
  ASSERT_EQ(trial[0].tensors.count("scalar/early"), 1u);
  const auto& s = trial[1].tensors["scalar/lr"];
  EXPECT_EQ(s.dtype, DType::kF64);
  EXPECT_THAT(s.shape, ElementsAre(1));
  double v;
  std::memcpy(&v, s.bytes.data(), sizeof(v));
  EXPECT_EQ(v, 0.25);
}

TEST_F(HookTest, LossesAreRawOnlyAndSaveShapeGoesToTheIndex) {
  HookConfig c = Config();
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  c.reduction_config =
      *ReductionConfig::Parse("max", /*save_raw_tensor=*/false, /*save_shape=*/true);
  auto hook = MakeHook(std::move(c));
  FloatTensor loss = Make({}, 2);
  FloatTensor w = Make({4, 2}, 0);
  hook->Step();
  EXPECT_TRUE(hook->Plan("CrossEntropyLoss_output_0").save_raw);
  EXPECT_TRUE(hook->Plan("CrossEntropyLoss_output_0").reductions.empty());
  ASSERT_TRUE(hook->SaveTensor("CrossEntropyLoss_output_0", loss.view()).ok());
  ASSERT_TRUE(hook->SaveTensor("Net_l.weight", w.view()).ok());
  ASSERT_TRUE(hook->Close().ok());
  auto trial = Read();
  EXPECT_EQ(trial[0].tensors.count("CrossEntropyLoss_output_0"), 1u);
  EXPECT_EQ(trial[0].tensors.count("Net_l.weight"), 0u);
  EXPECT_EQ(trial[0].tensors.count("smdebug/reductions/max/Net_l.weight"), 1u);
  EXPECT_THAT(trial[0].shapes["Net_l.weight"], ElementsAre(4, 2));
}

TEST_F(HookTest, CollectionsFileListsSavedNamesAndEffectiveConfigs) {
  HookConfig c = Config();
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 3});
  auto hook = MakeHook(std::move(c));
  FloatTensor w = Make({2}, 0);
  hook->Step();
  ASSERT_TRUE(hook->SaveTensor("Net_b.weight", w.view()).ok());
  ASSERT_TRUE(hook->SaveTensor("Net_a.weight", w.view()).ok());
  hook->Step();  // the first boundary after a saved step exports the collections
  const std::string path = "/trial/" + trial_format::CollectionsFilePath("worker_0");
  EXPECT_TRUE(env_->FileExists(path));
  ASSERT_TRUE(hook->Close().ok());
  auto j = nlohmann::json::parse(*env_->ReadFile(path));
  EXPECT_EQ(j["_meta"]["num_workers"], 1);
  const auto& w_json = j["collections"]["weights"];
  EXPECT_EQ(w_json["tensor_names"], nlohmann::json::array({"Net_a.weight", "Net_b.weight"}));
  EXPECT_EQ(w_json["save_config"]["TRAIN"]["save_interval"], 3);
  EXPECT_EQ(w_json["reduction_config"]["save_raw_tensor"], true);
  EXPECT_EQ(j["collections"]["losses"]["save_histogram"], false);
}

TEST_F(HookTest, IncludedCollectionThatMatchesNothingIsSkippedWithOneWarning) {
  HookConfig c = Config();
  c.quiet = false;
  c.include_collections = {"weight", "weights", "later", "relu_activations"};
  auto hook = MakeHook(std::move(c));
  // Defined after the hook was made, before the first step (smdebug's pattern): no warning.
  ASSERT_TRUE(hook->collections().GetOrCreate("later")->Include("^b").ok());
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(hook->Step());  // the training goes on; weights and later are saved
  const FloatTensor w = Make({2}, 1), b = Make({2}, 5);
  ASSERT_TRUE(hook->SaveTensor("a.weight", w.view()).ok());
  ASSERT_TRUE(hook->SaveTensor("b", b.view()).ok());
  hook->Step();
  hook->Step();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, ::testing::HasSubstr("collection 'weight' is not defined (did you mean "
                                        "'weights'?); known: all, biases, default, gradients, "
                                        "later, losses, weights. It is skipped"));
  EXPECT_THAT(err, ::testing::HasSubstr("collection 'relu_activations' is not defined"));
  EXPECT_EQ(err.find("'later'"), err.rfind("'later'"));          // only in the known list
  EXPECT_EQ(err.find("'weight' is"), err.rfind("'weight' is"));  // once, not at every step
  EXPECT_EQ(hook->stats().errors, 0);
  EXPECT_THAT(hook->saved_collections(), UnorderedElementsAre("weights", "later", "losses"));
  ASSERT_TRUE(hook->Close().ok());
  EXPECT_THAT(Read()[0].tensors,
              UnorderedElementsAre(::testing::Key("a.weight"), ::testing::Key("b")));
  // A collection that exists but matches nothing is named as such.
  HookConfig d = Config();
  d.quiet = false;
  d.out_dir = "/trial2";
  d.include_collections = {"empty"};
  auto other = MakeHook(std::move(d));
  other->collections().GetOrCreate("empty");
  ::testing::internal::CaptureStderr();
  other->Step();
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              ::testing::HasSubstr("collection 'empty' has no include_regex and no tensor names"));
}

TEST_F(HookTest, CreateRejectsBadConfigurations) {
  HookConfig c = Config();
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = -1});
  auto bad = Hook::Create(std::move(c));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("save_interval is -1"));

  HookConfig r = Config();
  r.include_regex = {"fc(1"};
  auto bad_regex = Hook::Create(std::move(r));
  ASSERT_FALSE(bad_regex.ok());
  EXPECT_THAT(bad_regex.status().message(), ::testing::HasSubstr("collection 'default'"));

  ASSERT_TRUE(env_->CreateDirs("/trial").ok());
  ASSERT_TRUE(env_->WriteFileAtomic("/trial/training_job_end.ts", "", false).ok());
  auto ended = Hook::Create(Config());
  ASSERT_FALSE(ended.ok());
  EXPECT_THAT(ended.status().message(), ::testing::HasSubstr("already holds a finished trial"));
}

TEST_F(HookTest, IncludeWorkersOneLeavesOtherRanksSilent) {
  HookConfig c = Config();
  c.rank = 1;
  c.world_size = 2;
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  auto hook = MakeHook(std::move(c));
  EXPECT_FALSE(hook->writes());
  EXPECT_EQ(hook->worker(), "worker_1");
  FloatTensor l = Make({}, 1);
  hook->Step();
  ASSERT_TRUE(hook->SaveTensor("MSELoss_output_0", l.view()).ok());
  ASSERT_TRUE(hook->SaveScalar("x", 1).ok());
  ASSERT_TRUE(hook->Close().ok());
  EXPECT_FALSE(env_->FileExists("/trial"));
}

TEST_F(HookTest, IncludeWorkersAllWritesTheEndMarkerWhenTheLastWorkerCloses) {
  std::vector<std::unique_ptr<Hook>> hooks;
  for (int rank = 0; rank < 3; ++rank) {
    HookConfig c = Config();
    c.rank = rank;
    c.world_size = 3;
    c.include_workers = IncludeWorkers::kAll;
    c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
    hooks.push_back(MakeHook(std::move(c)));
  }
  FloatTensor l = Make({}, 1);
  for (auto& h : hooks) {
    h->Step();
    ASSERT_TRUE(h->SaveTensor("MSELoss_output_0", l.view()).ok());
  }
  ASSERT_TRUE(hooks[1]->Close().ok());
  EXPECT_FALSE(Ended());  // smdebug would have written it here
  ASSERT_TRUE(hooks[0]->Close().ok());
  EXPECT_FALSE(Ended());
  ASSERT_TRUE(hooks[2]->Close().ok());
  EXPECT_TRUE(Ended());
  for (const char* w : {"worker_0", "worker_1", "worker_2"}) {
    EXPECT_EQ(Read(w)[0].tensors.count("MSELoss_output_0"), 1u) << w;
    auto j =
        nlohmann::json::parse(*env_->ReadFile("/trial/" + trial_format::CollectionsFilePath(w)));
    EXPECT_EQ(j["_meta"]["num_workers"], 3);
  }
}

TEST_F(HookTest, WorkerComesFromRankAndWorldSizeEnvironment) {
  setenv("RANK", "2", 1);
  setenv("WORLD_SIZE", "4", 1);
  HookConfig c = Config();
  c.rank = -1;
  c.world_size = -1;
  auto hook = MakeHook(std::move(c));
  EXPECT_EQ(hook->worker(), "worker_2");
  EXPECT_EQ(hook->world_size(), 4);
  setenv("RANK", "x", 1);
  HookConfig d = Config();
  d.rank = -1;
  d.world_size = -1;
  auto bad = Hook::Create(std::move(d));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("RANK='x'"));
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
}

TEST_F(HookTest, DryRunPlansButWritesNothing) {
  HookConfig c = Config();
  c.dry_run = true;
  c.save_all = true;
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  auto hook = MakeHook(std::move(c));
  FloatTensor w = Make({3}, 0);
  EXPECT_TRUE(hook->Step());
  ASSERT_TRUE(hook->SaveTensor("anything", w.view()).ok());
  ASSERT_TRUE(hook->Close().ok());
  EXPECT_EQ(hook->stats().tensors_saved, 1);
  EXPECT_FALSE(env_->FileExists("/trial"));
}

TEST_F(HookTest, FailsOpenWhenTheDiskIsFull) {
  FaultInjectionEnv faulty(env_.get());
  HookConfig c = Config();
  c.env = &faulty;
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  auto hook = MakeHook(std::move(c));
  faulty.SetDiskSpaceLeft(100);
  FloatTensor w = Make({1000}, 0);
  for (int i = 0; i < 3; ++i) {
    hook->Step();
    (void)hook->SaveTensor("Net_x.weight", w.view());  // never throws
  }
  Status s = hook->Close();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(hook->stats().steps_failed, 3);
  EXPECT_EQ(hook->stats().steps_saved, 0);
  // The job ended (the end marker) and lost its steps (the incomplete marker).
  EXPECT_TRUE(Ended());
  EXPECT_TRUE(env_->FileExists("/trial/incomplete_worker_0.json"));
}

TEST_F(HookTest, SaveStatsWritesPlannedReductionsFromGivenStatistics) {
  HookConfig c = Config();
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  c.reduction_config = *ReductionConfig::Parse("min,mean", false, true);
  auto hook = MakeHook(std::move(c));
  FloatTensor w = Make({2, 2}, 3);
  auto stats = ComputeStats(w.view());
  hook->Step();
  ASSERT_TRUE(hook->SaveStats("Net_gpu.weight", *stats, {2, 2}).ok());
  ASSERT_TRUE(hook->Close().ok());
  auto trial = Read();
  double v;
  std::memcpy(&v, trial[0].tensors["smdebug/reductions/mean/Net_gpu.weight"].bytes.data(), 8);
  EXPECT_EQ(v, 4.5);
  EXPECT_THAT(trial[0].shapes["Net_gpu.weight"], ElementsAre(2, 2));
}

TEST_F(HookTest, CustomTensorsAreSavedAtSavingStepsAsTheirCollectionSays) {
  HookConfig c = Config();
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 2});
  auto hook = MakeHook(std::move(c));
  FloatTensor t = Make({2}, 0);
  for (int i = 0; i < 3; ++i) {
    hook->Step();
    // "mine" is neither included nor configured: as in smdebug, it is saved (raw, the hook's
    // default) whenever the step saves anything.
    ASSERT_TRUE(hook->SaveCustomTensor("my_tensor", t.view(), {"mine"}).ok());
  }
  ASSERT_TRUE(hook->Close().ok());
  auto trial = Read();
  EXPECT_THAT(Steps(trial), ElementsAre(0, 2));
  EXPECT_EQ(trial[2].tensors.count("my_tensor"), 1u);
  EXPECT_THAT(hook->collections().Get("mine")->tensor_names(), ElementsAre("my_tensor"));
}

TEST_F(HookTest, SavedBeforeTheFirstStepLandsInStepZeroWithItsWallTime) {
  HookConfig c = Config();
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 2});
  auto hook = MakeHook(std::move(c));
  FloatTensor t = Make({2}, 0);
  ASSERT_TRUE(hook->SaveCustomTensor("early", t.view(), {"default"}).ok());
  t.data[0] = 10;  // the hook keeps a copy of what it was given
  ASSERT_TRUE(hook->SaveCustomTensor("early", t.view(), {"default"}).ok());  // the last one wins
  t.data[0] = 20;
  ASSERT_TRUE(hook->SaveScalar("lr", 0.5, 1.6e9 + 0.25).ok());
  hook->Step();
  hook->Step();
  ASSERT_TRUE(hook->Close().ok());
  auto trial = Read();
  EXPECT_THAT(Steps(trial), ElementsAre(0));
  float v[2];
  std::memcpy(v, trial[0].tensors["early"].bytes.data(), sizeof(v));
  EXPECT_EQ(v[0], 10);
  EXPECT_EQ(v[1], 1);
  EXPECT_THAT(hook->collections().Get("default")->tensor_names(), ElementsAre("early"));
  auto events = ReadEventFile("/trial/" + trial_format::EventFilePath(0, "worker_0"), env_.get());
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  int scalars = 0;
  for (const EventFileTensor& e : *events) {
    if (e.name != "scalar/lr") continue;
    ++scalars;
    EXPECT_DOUBLE_EQ(e.wall_time, 1.6e9 + 0.25);
  }
  EXPECT_EQ(scalars, 1);
}

TEST_F(HookTest, StepScopeEndsTheStep) {
  HookConfig c = Config();
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  auto hook = MakeHook(std::move(c));
  FloatTensor l = Make({}, 1);
  {
    Hook::StepScope step(*hook);
    EXPECT_TRUE(step.saving());
    ASSERT_TRUE(hook->SaveTensor("MSELoss_output_0", l.view()).ok());
  }
  ASSERT_TRUE(hook->Flush().ok());
  EXPECT_EQ(Read()[0].tensors.count("MSELoss_output_0"), 1u);  // visible before Close
  EXPECT_FALSE(Ended());
  ASSERT_TRUE(hook->Close().ok());
  EXPECT_TRUE(Ended());
}

TEST_F(HookTest, CreateFromJsonFileReadsTheEnvironment) {
  char tmpl[] = "/tmp/hook_json_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(dir).ok());
  const std::string cfg = dir + "/hook.json";
  nlohmann::json j = {{"LocalPath", dir + "/trial"},
                      {"HookParameters", {{"save_interval", "2"}}},
                      {"CollectionConfigurations", {{{"CollectionName", "biases"}}}}};
  ASSERT_TRUE(env->WriteFileAtomic(cfg, j.dump(), false).ok());
  setenv("TRAINSCOPE_CONFIG", cfg.c_str(), 1);
  auto hook = Hook::CreateFromJsonFile();
  unsetenv("TRAINSCOPE_CONFIG");
  ASSERT_TRUE(hook.ok()) << hook.status().ToString();
  EXPECT_THAT((*hook)->saved_collections(), UnorderedElementsAre("biases", "losses"));
  EXPECT_EQ((*hook)->config().out_dir, dir + "/trial");
  (*hook)->SetMode(Mode::kTrain);
  EXPECT_TRUE((*hook)->Step());
  EXPECT_FALSE((*hook)->Step());
  ASSERT_TRUE((*hook)->Close().ok());
  EXPECT_THAT(testing::ListFiles(env, dir + "/trial"), ::testing::Contains("training_job_end.ts"));
}

TEST_F(HookTest, WriteFailuresAreReportedOnceCountedAndMarkedInTheTrial) {
  FaultInjectionEnv fault(env_.get());
  HookConfig c = Config();
  c.env = &fault;
  c.quiet = false;
  c.include_collections = {"weights"};
  c.save_config = SaveConfig(SaveConfigMode{.save_interval = 1});
  auto hook = MakeHook(std::move(c));
  const FloatTensor w = Make({256}, 1);  // 1 KiB a step
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 10; ++i) {
    hook->Step();
    if (i == 5) {
      ASSERT_TRUE(hook->Flush().ok());  // steps 0-4 are on disk
      fault.SetDiskSpaceLeft(0);        // the disk is full from step 5 on
    }
    ASSERT_TRUE(hook->SaveTensor("a.weight", w.view()).ok());  // never an error to the trainer
  }
  const Status s = hook->Close();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(s.os_errno(), ENOSPC) << s.ToString();
  const HookStats st = hook->stats();
  EXPECT_EQ(st.steps_saved, 5);  // only the steps that reached the disk
  EXPECT_EQ(st.steps_failed, 5);
  EXPECT_EQ(st.steps_dropped, 0);
  EXPECT_EQ(st.steps_pending, 0);
  EXPECT_EQ(st.errors, 0);  // I/O losses are counted as steps, not as capture errors
  // Reported once (the file and errno), then one summary line at the end.
  const std::string report = "writing the trial /trial failed";
  ASSERT_NE(err.find(report), std::string::npos) << err;
  EXPECT_EQ(err.find(report), err.rfind(report)) << err;
  EXPECT_THAT(err, ::testing::HasSubstr(std::strerror(ENOSPC)));
  EXPECT_THAT(err, ::testing::HasSubstr("write /trial/"));  // the file
  EXPECT_THAT(err, ::testing::HasSubstr("the trial /trial is incomplete: 5 of 10 steps were not "
                                        "written (5 lost to I/O errors, 0 dropped)"));
  EXPECT_EQ(err.find("could not save"), std::string::npos) << err;
  EXPECT_EQ(Steps(Read()), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(Ended());  // the job ended; the marker says the trial is incomplete
  EXPECT_TRUE(env_->FileExists("/trial/incomplete_worker_0.json"));
}

}  // namespace
}  // namespace trainscope
