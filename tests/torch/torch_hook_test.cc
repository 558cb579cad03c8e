// TorchHook on real LibTorch training: a few steps of torch::nn models, the trial read back with
// trainscope's C++ Trial reader and compared with the tensors the training saw; and the example
// program (examples/libtorch/train_mlp.cc) read with the Python reader (trainscope.create_trial)
// and smdebug's.
#include "trainscope/torch_hook.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trainscope/trial.h"

namespace trainscope {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test temp dir, removed at the end.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("trainscope_torch_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string path(const std::string& sub = "") const { return (path_ / sub).string(); }

 private:
  fs::path path_;
};

// A model with a frozen input projection, a trained layer and a head inside a Sequential.
struct TinyNetImpl : torch::nn::Module {
  TinyNetImpl()
      : embed(register_module("embed", torch::nn::Linear(4, 8))),
        fc1(register_module("fc1", torch::nn::Linear(8, 8))),
        head(register_module("head", torch::nn::Sequential(torch::nn::Linear(8, 3)))) {
    for (auto& p : embed->parameters()) p.set_requires_grad(false);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return head->forward(torch::tanh(fc1->forward(torch::relu(embed->forward(x)))));
  }
  torch::nn::Linear embed, fc1;
  torch::nn::Sequential head;
};
TORCH_MODULE(TinyNet);

HookConfig TrainingConfig(const std::string& out_dir, int64_t save_interval) {
  HookConfig c;
  c.out_dir = out_dir;
  c.include_collections = std::vector<std::string>{"weights", "biases", "gradients", "losses"};
  SaveConfigMode m;
  m.save_interval = save_interval;
  c.save_config = SaveConfig(m);
  c.quiet = true;
  return c;
}

std::unique_ptr<TorchHook> MakeHook(HookConfig c) {
  auto h = TorchHook::Create(std::move(c));
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? std::move(*h) : nullptr;
}

std::unique_ptr<Trial> OpenTrial(const std::string& path) {
  auto t = Trial::Open(path);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(*t) : nullptr;
}

// Asserts that the trial's value of `name` at `step` is exactly `expected` (dtype, shape, bytes).
void ExpectValue(Trial& trial, const std::string& name, int64_t step, const torch::Tensor& expected,
                 Mode mode = Mode::kGlobal) {
  SCOPED_TRACE(name + " at step " + std::to_string(step));
  auto v = trial.Value(name, step, mode);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  const torch::Tensor e = expected.contiguous();
  EXPECT_EQ(v->dtype, TorchDType(e.scalar_type()));
  EXPECT_EQ(v->shape, e.sizes().vec());
  ASSERT_EQ(v->nbytes(), static_cast<size_t>(e.nbytes()));
  EXPECT_EQ(std::memcmp(v->data, e.data_ptr(), v->nbytes()), 0) << "values differ";
}

std::vector<std::string> Names(Trial& trial) {
  auto n = trial.TensorNames();
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return n.ok() ? *n : std::vector<std::string>{};
}

// Trains `steps` steps of a TinyNet with SGD and records, per saving step, the parameters at the
// start of the step, the gradients, and the loss.
struct Recorded {
  std::map<int64_t, std::map<std::string, torch::Tensor>> params, grads;
  std::map<int64_t, torch::Tensor> losses;
};

Recorded Train(TorchHook& hook, TinyNet& net, int steps) {
  Recorded r;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.5).momentum(0.5));
  for (int i = 0; i < steps; ++i) {
    TorchHook::StepScope scope(hook);
    const int64_t step = hook.step();
    if (scope.saving()) {
      for (const auto& p : net->named_parameters()) {
        r.params[step]["TinyNet_" + p.key()] = p.value().detach().clone();
      }
    }
    torch::Tensor x = torch::randn({16, 4});
    torch::Tensor y = torch::randint(0, 3, {16});
    torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    EXPECT_TRUE(hook.SaveLoss(loss).ok());
    opt.zero_grad();
    loss.backward();
    if (scope.saving()) {
      for (const auto& p : net->named_parameters()) {
        if (p.value().grad().defined()) {
          r.grads[step]["gradient/TinyNet_" + p.key()] = p.value().grad().clone();
        }
      }
      r.losses[step] = loss.detach().clone();
    }
    opt.step();
  }
  return r;
}

TEST(TorchModuleName, StripsNamespacesAndImpl) {
  TinyNet net;
  EXPECT_EQ(TorchModuleName(*net), "TinyNet");
  EXPECT_EQ(TorchModuleName(*torch::nn::Linear(2, 2)), "Linear");
  EXPECT_EQ(TorchModuleName(*torch::nn::Sequential()), "Sequential");
  EXPECT_EQ(TorchModuleName(*torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 1, 3))), "Conv2d");
}

TEST(TorchHook, SavesParametersGradientsAndLossesOfRealTraining) {
  torch::manual_seed(1);
  TempDir dir;
  auto hook = MakeHook(TrainingConfig(dir.path("trial"), 2));
  ASSERT_NE(hook, nullptr);
  TinyNet net;
  ASSERT_TRUE(hook->RegisterModule(net).ok());
  EXPECT_EQ(hook->parameter_names(),
            (std::vector<std::string>{"TinyNet_embed.weight", "TinyNet_embed.bias",
                                      "TinyNet_fc1.weight", "TinyNet_fc1.bias",
                                      "TinyNet_head.0.weight", "TinyNet_head.0.bias"}));
  EXPECT_EQ(
      hook->gradient_names(),
      (std::vector<std::string>{"gradient/TinyNet_fc1.weight", "gradient/TinyNet_fc1.bias",
                                "gradient/TinyNet_head.0.weight", "gradient/TinyNet_head.0.bias"}));
  const Recorded r = Train(*hook, net, 5);
  ASSERT_TRUE(hook->Close().ok()) << hook->Close().ToString();
  EXPECT_EQ(hook->stats().errors, 0);

  auto trial = OpenTrial(dir.path("trial"));
  ASSERT_NE(trial, nullptr);
  EXPECT_EQ(trial->Steps(), (std::vector<int64_t>{0, 2, 4}));
  std::set<std::string> expected_names = {"loss_output_0"};
  for (const auto& [name, t] : r.params.at(0)) expected_names.insert(name);
  for (const auto& [name, t] : r.grads.at(0)) expected_names.insert(name);
  const std::vector<std::string> names = Names(*trial);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), expected_names);
  // Frozen parameters: saved, but no gradient (autograd computed none, and no hook was added).
  EXPECT_TRUE(trial->HasTensor("TinyNet_embed.weight"));
  EXPECT_FALSE(trial->HasTensor("gradient/TinyNet_embed.weight"));
  EXPECT_FALSE(trial->HasTensor("gradient/TinyNet_embed.bias"));
  // ... and the trial says which parameters are frozen (_meta.parameters), as the Python hook's.
  EXPECT_TRUE(trial->records_parameters());
  EXPECT_EQ(trial->ParameterTrainable("TinyNet_embed.weight"), std::optional<bool>(false));
  EXPECT_EQ(trial->ParameterTrainable("TinyNet_fc1.weight"), std::optional<bool>(true));
  EXPECT_EQ(trial->ParameterTrainable("TinyNet_head.0.bias"), std::optional<bool>(true));

  for (int64_t step : {0, 2, 4}) {
    for (const auto& [name, t] : r.params.at(step)) ExpectValue(*trial, name, step, t);
    ASSERT_EQ(r.grads.at(step).size(), 4u);
    for (const auto& [name, t] : r.grads.at(step)) ExpectValue(*trial, name, step, t);
    ExpectValue(*trial, "loss_output_0", step, r.losses.at(step));
  }
  // The values are the parameters at the start of each step: training changed the trained ones
  // between steps 0 and 4, and not the frozen ones.
  EXPECT_FALSE(torch::equal(r.params.at(0).at("TinyNet_fc1.weight"),
                            r.params.at(4).at("TinyNet_fc1.weight")));
  EXPECT_TRUE(torch::equal(r.params.at(0).at("TinyNet_embed.weight"),
                           r.params.at(4).at("TinyNet_embed.weight")));
  // Collections as the Python hook writes them.
  auto steps = trial->TensorSteps("gradient/TinyNet_fc1.weight");
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(*steps, (std::vector<int64_t>{0, 2, 4}));
  auto weights = trial->TensorNames(Mode::kGlobal, std::nullopt, "", "weights");
  ASSERT_TRUE(weights.ok());
  EXPECT_EQ(*weights, (std::vector<std::string>{"TinyNet_embed.weight", "TinyNet_fc1.weight",
                                                "TinyNet_head.0.weight"}));
  auto losses = trial->TensorNames(Mode::kGlobal, std::nullopt, "", "losses");
  ASSERT_TRUE(losses.ok());
  EXPECT_EQ(*losses, (std::vector<std::string>{"loss_output_0"}));
}

TEST(TorchHook, ModesGradientsOnlyInTrainAndEvalLosses) {
  torch::manual_seed(2);
  TempDir dir;
  auto hook = MakeHook(TrainingConfig(dir.path("trial"), 1));
  ASSERT_NE(hook, nullptr);
  TinyNet net;
  ASSERT_TRUE(hook->RegisterModule(net).ok());
  hook->SetMode(Mode::kTrain);
  Train(*hook, net, 2);
  hook->SetMode(Mode::kEval);
  std::vector<torch::Tensor> eval_losses;
  for (int i = 0; i < 2; ++i) {
    TorchHook::StepScope scope(*hook);
    torch::Tensor x = torch::randn({8, 4});
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(net->forward(x), torch::zeros({8}, torch::kLong));
    EXPECT_TRUE(hook->SaveLoss(loss).ok());
    loss.backward();  // a backward in EVAL: gradients are never saved in EVAL (smdebug)
    eval_losses.push_back(loss.detach().clone());
  }
  ASSERT_TRUE(hook->Close().ok());
  auto trial = OpenTrial(dir.path("trial"));
  ASSERT_NE(trial, nullptr);
  EXPECT_EQ(trial->Steps(Mode::kTrain), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(trial->Steps(Mode::kEval), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(trial->Steps(), (std::vector<int64_t>{0, 1, 2, 3}));
  auto grad_steps = trial->TensorSteps("gradient/TinyNet_fc1.weight");
  ASSERT_TRUE(grad_steps.ok());
  EXPECT_EQ(*grad_steps, (std::vector<int64_t>{0, 1}));
  auto weight_steps = trial->TensorSteps("TinyNet_fc1.weight", Mode::kEval);
  ASSERT_TRUE(weight_steps.ok());
  EXPECT_EQ(*weight_steps, (std::vector<int64_t>{0, 1}));
  for (int64_t s = 0; s < 2; ++s) {
    ExpectValue(*trial, "loss_output_0", s, eval_losses[s], Mode::kEval);
  }
}

TEST(TorchHook, ReductionsOnlyMatchTheParameters) {
  torch::manual_seed(3);
  TempDir dir;
  HookConfig c = TrainingConfig(dir.path("trial"), 1);
  auto rc = ReductionConfig::Parse("min,max,mean,l2_norm,abs_mean,zero_fraction");
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  c.reduction_config = *rc;
  auto hook = MakeHook(std::move(c));
  ASSERT_NE(hook, nullptr);
  TinyNet net;
  ASSERT_TRUE(hook->RegisterModule(net).ok());
  const Recorded r = Train(*hook, net, 2);
  ASSERT_TRUE(hook->Close().ok());
  auto trial = OpenTrial(dir.path("trial"));
  ASSERT_NE(trial, nullptr);
  for (int64_t step : {0, 1}) {
    for (const auto& [name, t] : r.params.at(step)) {
      SCOPED_TRACE(name);
      auto saved = trial->SavedReductions(name, step);
      ASSERT_TRUE(saved.ok()) << saved.status().ToString();
      EXPECT_EQ(saved->size(), 6u);
      const torch::Tensor f = t.to(torch::kDouble);
      for (const auto& [red, value] : *saved) {
        double want = 0;
        switch (red.op) {
          case ReductionOp::kMin:
            want = f.min().item<double>();
            break;
          case ReductionOp::kMax:
            want = f.max().item<double>();
            break;
          case ReductionOp::kMean:
            want = (red.abs ? f.abs() : f).mean().item<double>();
            break;
          case ReductionOp::kL2:
            want = f.norm().item<double>();
            break;
          case ReductionOp::kZeroFraction:
            want = f.eq(0).to(torch::kDouble).mean().item<double>();
            break;
          default:
            ADD_FAILURE() << "unexpected reduction " << ReductionOpName(red.op);
        }
        // Sums of float32 values accumulate in float32 runs (trainscope/reductions.h): within
        // 16 float32 epsilons of the sum of |x|; min, max and counts are exact.
        double tol = 1e-12 * (1 + std::fabs(want));
        if (red.op == ReductionOp::kMean) tol += 16 * 0x1p-24 * f.abs().mean().item<double>();
        if (red.op == ReductionOp::kL2) tol += 16 * 0x1p-24 * want;
        EXPECT_NEAR(value, want, tol) << ReductionOpName(red.op);
      }
      // Reductions only: no raw value.
      EXPECT_FALSE(trial->Value(name, step).ok());
    }
  }
}

// The statistics computed with torch ops (the path of tensors on a GPU) are those of the
// trainscope's own single pass, reduction by reduction.
TEST(TorchTensorStats, MatchesComputeStats) {
  torch::manual_seed(4);
  torch::Tensor with_specials = torch::randn({5, 7});
  with_specials[1][2] = std::numeric_limits<float>::infinity();
  with_specials[3][4] = 0;
  torch::Tensor with_nan = torch::randn({9});
  with_nan[5] = std::nanf("");
  const std::vector<torch::Tensor> cases = {
      torch::randn({33, 17}),
      torch::randn({6, 4}).t(),  // not contiguous
      with_specials,
      with_nan,
      torch::randint(-5, 5, {40}, torch::kLong),
      torch::randn({12}).gt(0),
      torch::randn({10}, torch::kHalf),
      torch::randn({4, 4}, torch::kComplexFloat),
      torch::full({3}, 2.5, torch::kDouble),
  };
  std::vector<Reduction> all;
  for (auto op : {ReductionOp::kMin, ReductionOp::kMax, ReductionOp::kMean, ReductionOp::kStd,
                  ReductionOp::kVariance, ReductionOp::kSum, ReductionOp::kProd, ReductionOp::kL1,
                  ReductionOp::kL2, ReductionOp::kNanCount, ReductionOp::kInfCount,
                  ReductionOp::kZeroFraction}) {
    all.push_back({op, false});
    all.push_back({op, true});
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    auto view = TorchTensorView(cases[i]);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    auto want = ComputeStats(*view);
    ASSERT_TRUE(want.ok());
    auto got = TorchTensorStats(cases[i]);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->count, want->count);
    for (const Reduction& r : all) {
      const double w = want->Value(r), g = got->Value(r);
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(g)) << ReductionTensorName("x", r);
      } else if (std::isinf(w)) {
        EXPECT_EQ(g, w) << ReductionTensorName("x", r);
      } else {
        EXPECT_NEAR(g, w, 1e-9 * (1 + std::fabs(w))) << ReductionTensorName("x", r);
      }
    }
  }
  auto empty = TorchTensorStats(torch::zeros({0, 3}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->count, 0);
}

// The hook asks TorchTensorStats for FieldsRead(the planned reductions) only: each reduction
// computed from just its fields is ComputeStats's, and the fields nobody asked for are left
// at TensorStats' defaults (not computed).
TEST(TorchTensorStats, ComputesOnlyTheFieldsRead) {
  torch::manual_seed(6);
  torch::Tensor x = torch::randn({7, 5});
  x[2][3] = 0;
  const std::vector<torch::Tensor> cases = {x, torch::randn({4, 4}, torch::kComplexFloat),
                                            torch::randint(-3, 3, {11}, torch::kInt)};
  for (size_t i = 0; i < cases.size(); ++i) {
    auto view = TorchTensorView(cases[i]);
    ASSERT_TRUE(view.ok());
    auto want = ComputeStats(*view);
    ASSERT_TRUE(want.ok());
    for (ReductionOp op : kAllReductionOps) {
      for (bool abs : {false, true}) {
        const Reduction r{op, abs};
        SCOPED_TRACE("case " + std::to_string(i) + " " + ReductionTensorName("x", r));
        const StatsFieldSet fields = FieldsRead(r);
        auto got = TorchTensorStats(cases[i], fields);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_NEAR(got->Value(r), want->Value(r), 1e-9 * (1 + std::fabs(want->Value(r))));
        const TensorStats defaults;
        for (StatsField f : StatsFieldSet::All().ToVector()) {
          if (fields.Has(f) || f == StatsField::kCount || f == StatsField::kMin ||
              f == StatsField::kMax || f == StatsField::kAbsMin || f == StatsField::kAbsMax) {
            continue;  // extremes start at +-inf, as in ComputeStats
          }
          EXPECT_EQ(got->Get(f), defaults.Get(f)) << StatsFieldName(f);
        }
      }
    }
  }
  auto none = TorchTensorStats(x, StatsFieldSet{});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->count, 35);
  EXPECT_EQ(none->sum, 0);
}

TEST(TorchHook, SavesStridedAndEveryDtype) {
  torch::manual_seed(5);
  TempDir dir;
  HookConfig c;
  c.out_dir = dir.path("trial");
  c.include_regex = {"^t_"};
  c.quiet = true;
  auto hook = MakeHook(std::move(c));
  ASSERT_NE(hook, nullptr);
  const std::map<std::string, torch::Tensor> tensors = {
      {"t_transposed", torch::randn({3, 5}).t()},
      {"t_sliced", torch::arange(40, torch::kInt)
                       .reshape({5, 8})
                       .index({torch::indexing::Slice(1, 4), torch::indexing::Slice(0, 8, 3)})},
      {"t_expanded", torch::randn({1, 4}).expand({3, 4})},
      {"t_half", torch::randn({6}, torch::kHalf)},
      {"t_bfloat16", torch::randn({6}, torch::kBFloat16)},
      {"t_int64", torch::randint(-100, 100, {7}, torch::kLong)},
      {"t_uint8", torch::randint(0, 255, {7}, torch::kByte)},
      {"t_bool", torch::randn({5}).gt(0)},
      {"t_complex", torch::randn({2, 2}, torch::kComplexDouble)},
      {"t_scalar", torch::tensor(3.25)},
      {"t_requires_grad", torch::randn({4}, torch::requires_grad())},
  };
  const torch::Tensor f8 = torch::randn({8}).to(torch::kFloat8_e4m3fn);
  hook->Step();
  for (const auto& [name, t] : tensors) EXPECT_TRUE(hook->SaveTensor(name, t).ok()) << name;
  EXPECT_TRUE(hook->SaveTensor("t_float8", f8).ok());
  EXPECT_TRUE(hook->SaveTensor("t_undefined", torch::Tensor()).ok());
  EXPECT_TRUE(hook->SaveTensor("not_matched", torch::randn({2})).ok());
  ASSERT_TRUE(hook->Close().ok());
  auto trial = OpenTrial(dir.path("trial"));
  ASSERT_NE(trial, nullptr);
  for (const auto& [name, t] : tensors) ExpectValue(*trial, name, 0, t.detach());
  ExpectValue(*trial, "t_float8", 0, f8.to(torch::kFloat));  // stored as float32
  EXPECT_FALSE(trial->HasTensor("t_undefined"));
  EXPECT_FALSE(trial->HasTensor("not_matched"));
}

TEST(TorchHook, LossNamesAndRecordedValues) {
  TempDir dir;
  HookConfig c;
  c.out_dir = dir.path("trial");
  c.include_collections = std::vector<std::string>{"losses", "outputs"};
  SaveConfigMode every;
  every.save_interval = 1;
  c.save_config = SaveConfig(every);
  c.quiet = true;
  auto hook = MakeHook(std::move(c));
  ASSERT_NE(hook, nullptr);
  ASSERT_TRUE(hook->hook().collections().GetOrCreate("outputs")->Include("^logits_output").ok());
  const torch::Tensor a = torch::tensor(0.5f), b = torch::tensor(1.5f), m = torch::tensor(2.0);
  const torch::Tensor logits = torch::randn({2, 3});
  hook->Step();
  EXPECT_TRUE(hook->SaveLoss(a).ok());
  EXPECT_TRUE(hook->SaveLoss(b).ok());  // a second loss in the step: loss_output_1
  EXPECT_TRUE(
      hook->SaveLoss(m, "mse").ok());  // outside the losses regex: named into the collection
  EXPECT_TRUE(hook->SaveLoss(a, "CrossEntropyLoss").ok());
  EXPECT_TRUE(hook->RecordTensorValue("logits", logits).ok());
  EXPECT_TRUE(hook->SaveScalar("lr", torch::tensor(0.125)).ok());
  hook->Step();
  EXPECT_TRUE(hook->SaveLoss(b).ok());  // counts restart every step
  ASSERT_TRUE(hook->Close().ok());
  auto trial = OpenTrial(dir.path("trial"));
  ASSERT_NE(trial, nullptr);
  ExpectValue(*trial, "loss_output_0", 0, a);
  ExpectValue(*trial, "loss_output_1", 0, b);
  ExpectValue(*trial, "mse_output_0", 0, m);
  ExpectValue(*trial, "CrossEntropyLoss_output_0", 0, a);
  ExpectValue(*trial, "logits_output_0", 0, logits);
  ExpectValue(*trial, "scalar/lr", 0, torch::tensor({0.125}, torch::kDouble));
  ExpectValue(*trial, "loss_output_0", 1, b);
  EXPECT_FALSE(trial->HasTensor("loss_output_2"));
  auto losses = trial->TensorNames(Mode::kGlobal, std::nullopt, "", "losses");
  ASSERT_TRUE(losses.ok());
  EXPECT_EQ(*losses, (std::vector<std::string>{"CrossEntropyLoss_output_0", "loss_output_0",
                                               "loss_output_1", "mse_output_0"}));
}

TEST(TorchHook, RegistrationRulesAndSharedParameters) {
  TempDir dir;
  auto hook = MakeHook(TrainingConfig(dir.path("trial"), 1));
  ASSERT_NE(hook, nullptr);
  TinyNet net;
  ASSERT_TRUE(hook->RegisterModule(net).ok());
  Status again = hook->RegisterModule(net);
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("registered already"), std::string::npos) << again.ToString();
  Status sub = hook->RegisterModule(net->fc1);  // its parameters are the net's
  EXPECT_EQ(sub.code(), StatusCode::kInvalidArgument) << sub.ToString();

  // A submodule under two names: its parameters are saved once, under their first path.
  torch::nn::Sequential twice;
  torch::nn::Linear shared(3, 3);
  twice->register_module("first", shared);
  twice->register_module("second", shared);
  ASSERT_TRUE(hook->RegisterModule(twice, "Twice").ok());
  std::vector<std::string> names = hook->parameter_names();
  names.erase(names.begin(), names.begin() + 6);  // TinyNet's
  EXPECT_EQ(names, (std::vector<std::string>{"Twice_first.weight", "Twice_first.bias"}));
  EXPECT_EQ(hook->gradient_names().size(), 4u + 2u);
  EXPECT_TRUE(hook->Close().ok());
  EXPECT_EQ(hook->RegisterModule(torch::nn::Linear(2, 2)).code(), StatusCode::kInvalidArgument);
}

// A linear layer whose parameters live on the meta device (shapes, no data).
struct MetaLinearImpl : torch::nn::Module {
  MetaLinearImpl() {
    const auto meta = torch::TensorOptions().device(torch::kMeta);
    weight = register_parameter("weight", torch::empty({2, 4}, meta));
    bias = register_parameter("bias", torch::empty({2}, meta));
  }
  torch::Tensor forward(const torch::Tensor& x) { return torch::matmul(x, weight.t()) + bias; }
  torch::Tensor weight, bias;
};
TORCH_MODULE(MetaLinear);

// Fail open: a tensor that cannot be brought to the host (a meta tensor: shapes, no data) fails
// inside the hook, during the step boundary and inside autograd's gradient hooks; the training
// goes on, the error is printed once and then counted.
TEST(TorchHook, ErrorsNeverReachTheTraining) {
  TempDir dir;
  HookConfig c = TrainingConfig(dir.path("trial"), 1);
  c.quiet = false;
  auto hook = MakeHook(std::move(c));
  ASSERT_NE(hook, nullptr);
  MetaLinear meta;
  ASSERT_TRUE(hook->RegisterModule(meta, "Meta").ok());
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    TorchHook::StepScope scope(*hook);
    torch::Tensor loss = meta->forward(torch::randn({5, 4}, torch::kMeta)).sum();
    EXPECT_NO_THROW(loss.backward());
    EXPECT_TRUE(meta->weight.grad().defined());  // autograd finished its work
    EXPECT_TRUE(hook->SaveScalar("step_done", static_cast<double>(i)).ok());
  }
  EXPECT_FALSE(hook->Close().ok());  // the first error, as first_error() says
  const std::string err = ::testing::internal::GetCapturedStderr();
  // Per step: 2 parameters at the boundary + 2 gradients.
  EXPECT_EQ(hook->stats().errors, 12);
  EXPECT_FALSE(hook->hook().first_error().ok());
  size_t printed = 0;
  for (size_t pos = err.find("trainscope: could not save"); pos != std::string::npos;
       pos = err.find("trainscope: could not save", pos + 1)) {
    ++printed;
  }
  EXPECT_EQ(printed, 1u) << err;
  EXPECT_NE(err.find("Meta_weight"), std::string::npos) << err;
  // What could be saved was: the scalars of every step.
  auto trial = OpenTrial(dir.path("trial"));
  ASSERT_NE(trial, nullptr);
  auto steps = trial->TensorSteps("scalar/step_done");
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  EXPECT_EQ(*steps, (std::vector<int64_t>{0, 1, 2}));
}

// The module may outlive the hook: its gradient hooks are removed, and training goes on.
TEST(TorchHook, ModuleOutlivesTheHook) {
  TempDir dir;
  TinyNet net;
  {
    auto hook = MakeHook(TrainingConfig(dir.path("trial"), 1));
    ASSERT_NE(hook, nullptr);
    ASSERT_TRUE(hook->RegisterModule(net).ok());
    Train(*hook, net, 1);
  }
  torch::Tensor loss = net->forward(torch::randn({2, 4})).sum();
  EXPECT_NO_THROW(loss.backward());
  EXPECT_TRUE(net->fc1->weight.grad().defined());
  auto trial = OpenTrial(dir.path("trial"));
  ASSERT_NE(trial, nullptr);
  EXPECT_TRUE(trial->training_ended());
  EXPECT_EQ(trial->Steps(), (std::vector<int64_t>{0}));
}

TEST(TorchHook, SmdebugJsonConfiguration) {
  torch::manual_seed(6);
  TempDir dir;
  const std::string config = dir.path("hook.json");
  std::ofstream(config) << nlohmann::json{{"LocalPath", dir.path("trial")},
                                          {"HookParameters", {{"save_steps", "1,3"}}},
                                          {"CollectionConfigurations",
                                           {{{"CollectionName", "gradients"}},
                                            {{"CollectionName", "biases"}}}}}
                               .dump();
  auto created = TorchHook::CreateFromJsonFile(config);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  TorchHook& hook = **created;
  TinyNet net;
  ASSERT_TRUE(hook.RegisterModule(net).ok());
  const Recorded r = Train(hook, net, 4);
  ASSERT_TRUE(hook.Close().ok());
  auto trial = OpenTrial(dir.path("trial"));
  ASSERT_NE(trial, nullptr);
  // save_steps come in addition to the interval (500 by default: step 0), as in smdebug.
  EXPECT_EQ(trial->Steps(), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_FALSE(trial->HasTensor("TinyNet_fc1.weight"));  // weights are not included
  ExpectValue(*trial, "TinyNet_fc1.bias", 3, r.params.at(3).at("TinyNet_fc1.bias"));
  ExpectValue(*trial, "gradient/TinyNet_head.0.weight", 1,
              r.grads.at(1).at("gradient/TinyNet_head.0.weight"));
  ExpectValue(*trial, "loss_output_0", 3, r.losses.at(3));
}

// ---- the example program, read with the Python readers --------------------------------------

std::string RunCommand(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  *status = ::pclose(p);
  return out;
}

std::string Python() {
  if (const char* p = std::getenv("TRAINSCOPE_PYTHON"); p != nullptr && p[0] != '\0') return p;
  const std::string configured = TRAINSCOPE_CONFIGURED_PYTHON;
  return configured.empty() ? "python3" : configured;
}

// Reads a trial with trainscope.create_trial and (if importable) smdebug's create_trial; prints
// one JSON object per reader: tensor names, steps per mode, and every loss value.
constexpr const char* kReadTrial = R"PY(
import json, sys
path, which = sys.argv[1], sys.argv[2]
if which == "trainscope":
    from trainscope import create_trial
    from trainscope.modes import ModeKeys
else:
    try:
        from smdebug.trials import create_trial
        from smdebug.core.modes import ModeKeys
    except Exception as e:
        print(json.dumps({"unavailable": repr(e)}))
        sys.exit(0)
t = create_trial(path)
out = {"names": sorted(t.tensor_names()), "steps": list(t.steps()),
       "train_steps": list(t.steps(mode=ModeKeys.TRAIN)),
       "eval_steps": list(t.steps(mode=ModeKeys.EVAL)),
       "loss": {}}
for mode, key in ((ModeKeys.TRAIN, "TRAIN"), (ModeKeys.EVAL, "EVAL")):
    tensor = t.tensor("loss_output_0")
    for s in tensor.steps(mode=mode):
        out["loss"]["%s %d" % (key, s)] = float(tensor.value(s, mode=mode).reshape(-1)[0])
w = t.tensor("Net_fc1.weight").value(t.steps()[0])
out["fc1_weight_shape"] = list(w.shape)
print(json.dumps(out))
)PY";

TEST(TorchExample, TrainMlpTrialReadsInPython) {
  TempDir dir;
  const std::string trial_dir = dir.path("trial");
  int status = 0;
  const std::string out =
      RunCommand(std::string("'") + TRAINSCOPE_TRAIN_MLP + "' --out_dir '" + trial_dir +
                     "' --steps 12 --save_interval 3 --eval_every 6 2>&1",
                 &status);
  ASSERT_EQ(status, 0) << out;
  // The losses the program printed, by "<MODE> <mode step>" (only saved steps are in the trial).
  std::map<std::string, double> printed;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    char mode[8];
    long long step = 0, mode_step = 0;
    double loss = 0;
    if (std::sscanf(line.c_str(), "%7s step=%lld mode_step=%lld loss=%lf", mode, &step, &mode_step,
                    &loss) == 4) {
      printed[std::string(mode) + " " + std::to_string(mode_step)] = loss;
    }
  }
  ASSERT_EQ(printed.size(), 14u) << out;  // 12 TRAIN steps and 2 EVAL steps

  // The C++ reader first: the trial is complete and the losses are the printed ones.
  auto trial = OpenTrial(trial_dir);
  ASSERT_NE(trial, nullptr);
  EXPECT_EQ(trial->Steps(Mode::kTrain), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(trial->Steps(Mode::kEval), (std::vector<int64_t>{0, 1}));

  const std::string script = dir.path("read_trial.py");
  std::ofstream(script) << kReadTrial;
  for (const char* reader : {"trainscope", "smdebug"}) {
    SCOPED_TRACE(reader);
    const std::string json_text = RunCommand(
        "'" + Python() + "' '" + script + "' '" + trial_dir + "' " + reader + " 2>&1", &status);
    if (std::string(reader) == "trainscope" && status != 0 &&
        json_text.find("No module named 'trainscope'") != std::string::npos) {
      GTEST_SKIP() << Python() << " cannot import trainscope (install it with `pip install .`, "
                   << "or set PYTHONPATH=python in a build with -DTRAINSCOPE_BUILD_PYTHON=ON)";
    }
    ASSERT_EQ(status, 0) << json_text;
    std::string last_line;  // the JSON (warnings may come before it)
    std::istringstream out_lines(json_text);
    for (std::string l; std::getline(out_lines, l);) {
      if (!l.empty()) last_line = l;
    }
    const nlohmann::json j = nlohmann::json::parse(last_line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << json_text;
    if (j.contains("unavailable")) {
      ASSERT_EQ(std::string(reader), "smdebug") << json_text;
      continue;  // smdebug is an optional oracle here (it is in requirements.lock for CI)
    }
    EXPECT_EQ(j["train_steps"], nlohmann::json::array({0, 3, 6, 9}));
    EXPECT_EQ(j["eval_steps"], nlohmann::json::array({0, 1}));
    EXPECT_EQ(j["steps"].size(), 6u);
    EXPECT_EQ(j["fc1_weight_shape"], nlohmann::json::array({32, 2}));
    std::set<std::string> names = j["names"].get<std::set<std::string>>();
    for (const char* n : {"Net_fc1.weight", "Net_fc1.bias", "Net_fc3.weight", "Net_fc3.bias",
                          "gradient/Net_fc1.weight", "gradient/Net_fc2.bias", "loss_output_0",
                          "scalar/eval_accuracy"}) {
      EXPECT_EQ(names.count(n), 1u) << n;
    }
    EXPECT_EQ(names.size(), 14u) << j["names"];  // 6 parameters, 6 gradients, loss, accuracy
    // Saved losses: TRAIN mode steps 0, 3, 6, 9 and EVAL mode step 0 (EVAL step 1 is not due;
    // that step holds only the accuracy scalar, which is written at every step).
    ASSERT_EQ(j["loss"].size(), 5u) << j["loss"];
    for (const auto& [key, value] : j["loss"].items()) {
      ASSERT_EQ(printed.count(key), 1u) << key;
      // The trial holds the float32 loss; the program printed it with 9 significant digits.
      EXPECT_EQ(static_cast<float>(value.get<double>()), static_cast<float>(printed[key])) << key;
    }
  }
}

}  // namespace
}  // namespace trainscope
