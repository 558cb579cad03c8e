// A LibTorch training program that writes a trainscope trial: a small MLP learns to tell two
// interleaved spirals apart (data generated here, nothing downloaded), with an evaluation pass
// every few steps.
//
//   train_mlp --out_dir /tmp/trial [--steps 60] [--save_interval 5] [--eval_every 20]
//             [--batch 64] [--seed 0] [--config hook.json]
//
// Without --config it saves weights, biases, gradients and losses every --save_interval steps
// of each mode; with --config (or TRAINSCOPE_CONFIG / SMDEBUG_CONFIG_FILE_PATH set) the hook is
// configured by smdebug's JSON hook configuration instead. Every step prints one line,
//   TRAIN step=<global step> mode_step=<step of the mode> loss=<loss, 9 significant digits>
// and the trial reads like one written by trainscope.pytorch: "Net_fc1.weight",
// "gradient/Net_fc1.weight", "loss_output_0" (trainscope.create_trial, smdebug's create_trial,
// or `trainscope` commands on the folder). A rule's stop request (`trainscope run --action stop`)
// ends the training at the next step boundary, with the trial closed and exit code 0.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numbers>
#include <string>

#include "trainscope/torch_hook.h"

namespace {

struct Options {
  std::string out_dir;
  std::string config;
  int64_t steps = 60;
  int64_t save_interval = 5;
  int64_t eval_every = 20;
  int64_t batch = 64;
  uint64_t seed = 0;
};

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(2, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 32))),
        fc3(register_module("fc3", torch::nn::Linear(32, 2))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc1->forward(x));
    x = torch::relu(fc2->forward(x));
    return fc3->forward(x);
  }

  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Net);

// Two interleaved spirals (two turns each) with a little noise, shuffled: points [n, 2] (float32)
// and labels [n] (int64).
std::pair<torch::Tensor, torch::Tensor> Spirals(int64_t n) {
  constexpr double kTurns = 2.0;
  const int64_t half = n / 2;
  torch::Tensor t = torch::rand({half}) * kTurns * std::numbers::pi + 0.5;  // radius grows with t
  torch::Tensor arm =
      torch::stack({t * torch::cos(t), t * torch::sin(t)}, 1) / (kTurns * std::numbers::pi + 0.5);
  torch::Tensor x = torch::cat({arm, -arm}) + 0.03 * torch::randn({2 * half, 2});
  torch::Tensor y =
      torch::cat({torch::zeros({half}, torch::kLong), torch::ones({half}, torch::kLong)});
  torch::Tensor order = torch::randperm(2 * half);
  return {x.index_select(0, order), y.index_select(0, order)};
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "train_mlp: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out_dir") {
      o->out_dir = value("--out_dir");
    } else if (a == "--config") {
      o->config = value("--config");
    } else if (a == "--steps") {
      o->steps = std::atoll(value("--steps"));
    } else if (a == "--save_interval") {
      o->save_interval = std::atoll(value("--save_interval"));
    } else if (a == "--eval_every") {
      o->eval_every = std::atoll(value("--eval_every"));
    } else if (a == "--batch") {
      o->batch = std::atoll(value("--batch"));
    } else if (a == "--seed") {
      o->seed = std::strtoull(value("--seed"), nullptr, 10);
    } else {
      std::fprintf(stderr, "train_mlp: unknown argument %s\n", a.c_str());
      return false;
    }
  }
  const bool env_config =
      std::getenv("TRAINSCOPE_CONFIG") != nullptr || std::getenv("SMDEBUG_CONFIG_FILE_PATH");
  if (o->out_dir.empty() && o->config.empty() && !env_config) {
    std::fprintf(stderr, "train_mlp: give --out_dir DIR (the trial folder) or --config FILE\n");
    return false;
  }
  if (o->steps < 1 || o->save_interval < 1 || o->eval_every < 1 || o->batch < 1) {
    std::fprintf(stderr,
                 "train_mlp: --steps, --save_interval, --eval_every and --batch must be >= 1\n");
    return false;
  }
  return true;
}

}  // namespace

// [readme-begin]
static trainscope::Result<std::unique_ptr<trainscope::TorchHook>> MakeHook(const Options& o) {
  if (!o.config.empty() || o.out_dir.empty()) {
    return trainscope::TorchHook::CreateFromJsonFile(o.config);
  }
  trainscope::HookConfig config;
  config.out_dir = o.out_dir;
  config.include_collections = std::vector<std::string>{"weights", "biases", "gradients", "losses"};
  trainscope::SaveConfigMode every;
  every.save_interval = o.save_interval;
  config.save_config = trainscope::SaveConfig(every);
  return trainscope::TorchHook::Create(std::move(config));
}

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;
  torch::manual_seed(o.seed);

  auto hook_or = MakeHook(o);
  if (!hook_or.ok()) {
    std::fprintf(stderr, "train_mlp: %s\n", hook_or.status().ToString().c_str());
    return 1;
  }
  trainscope::TorchHook& hook = **hook_or;

  auto [train_x, train_y] = Spirals(1024);
  auto [eval_x, eval_y] = Spirals(256);
  Net net;
  if (auto s = hook.RegisterModule(net); !s.ok()) {
    std::fprintf(stderr, "train_mlp: %s\n", s.ToString().c_str());
    return 1;
  }
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-2));

  const int64_t n = train_x.size(0);
  for (int64_t step = 0; step < o.steps; ++step) {
    {
      hook.SetMode(trainscope::Mode::kTrain);
      trainscope::TorchHook::StepScope scope(hook);
      if (hook.StopRequested()) break;  // a rule asked to stop; the hook said why and closed
      const int64_t begin = (step * o.batch) % n;
      torch::Tensor idx = torch::arange(begin, begin + o.batch) % n;
      torch::Tensor loss = torch::nn::functional::cross_entropy(
          net->forward(train_x.index_select(0, idx)), train_y.index_select(0, idx));
      // Saving fails open: the hook prints the first error and Close() returns it.
      (void)hook.SaveLoss(loss);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      std::printf("TRAIN step=%lld mode_step=%lld loss=%.9g\n", static_cast<long long>(hook.step()),
                  static_cast<long long>(hook.mode_step()), loss.item<double>());
    }
    if ((step + 1) % o.eval_every == 0) {
      torch::NoGradGuard no_grad;
      hook.SetMode(trainscope::Mode::kEval);
      trainscope::TorchHook::StepScope scope(hook);
      if (hook.StopRequested()) break;
      torch::Tensor logits = net->forward(eval_x);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, eval_y);
      (void)hook.SaveLoss(loss);  // fails open, as above
      const double accuracy = logits.argmax(1).eq(eval_y).to(torch::kDouble).mean().item<double>();
      (void)hook.SaveScalar("eval_accuracy", accuracy);
      std::printf("EVAL step=%lld mode_step=%lld loss=%.9g accuracy=%.4f\n",
                  static_cast<long long>(hook.step()), static_cast<long long>(hook.mode_step()),
                  loss.item<double>(), accuracy);
    }
  }
  const trainscope::Status closed = hook.Close();
  const trainscope::HookStats stats = hook.stats();
  std::printf("trainscope: %lld steps saved, %lld tensors, %s\n",
              static_cast<long long>(stats.steps_saved),
              static_cast<long long>(stats.tensors_saved),
              closed.ok() ? "no errors" : closed.ToString().c_str());
  return closed.ok() ? 0 : 1;
}
// [readme-end]
