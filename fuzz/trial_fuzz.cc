// libFuzzer target: the whole tensor reader (trial.h) over a trial in memory whose files come
// from the fuzz input, cut into parts (fuzz_util.h): the collections file, then the index file and
// the event file of step 0, then those of step 1 (make_corpus writes seeds from a real trial).
// Every query the Python trial and `trainscope ls` make is asked: steps, modes, tensor names,
// every value, reduction and shape. Nothing may crash, hang or read out of bounds; every failure
// is a Status, and a damaged index file is listed in DamagedIndexFiles.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/env.h"
#include "trainscope/reductions.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"

using trainscope::fuzz::Require;
namespace tf = trainscope::trial_format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts =
      trainscope::fuzz::SplitParts(std::string_view(reinterpret_cast<const char*>(data), size), 5);
  auto env = trainscope::NewMemEnv();
  auto put = [&](const std::string& path, std::string_view text) {
    trainscope::fuzz::PutFile(env.get(), "/t/" + path, text);
  };
  put(tf::CollectionsFilePath(tf::kDefaultWorker), parts[0]);
  for (int64_t step = 0; step < 2; ++step) {
    put(tf::IndexFilePath(step, tf::kDefaultWorker), parts[1 + 2 * step]);
    put(tf::EventFilePath(step, tf::kDefaultWorker), parts[2 + 2 * step]);
  }
  put(std::string(tf::kEndOfJobFile), "");

  trainscope::TrialOptions options;
  options.env = env.get();
  options.use_inotify = false;
  options.end_delay = std::chrono::milliseconds(0);
  auto trial = trainscope::Trial::Open("/t", options);
  if (!trial.ok()) return 0;
  trainscope::Trial& t = **trial;
  (void)t.Refresh();
  (void)t.workers();
  (void)t.collections();
  (void)t.Modes();
  (void)t.TensorNames(trainscope::Mode::kGlobal, std::nullopt, "", "all");
  const auto steps = t.Steps(trainscope::Mode::kGlobal, /*show_incomplete=*/true);
  for (int64_t step : t.Steps()) {
    (void)t.ModeOf(step);
    (void)t.ModeStep(step);
    (void)t.HasPassedStep(step);
  }
  auto names = t.TensorNames();
  if (!names.ok()) return 0;
  int reads = 0;
  for (const std::string& name : *names) {
    (void)t.TensorSteps(name);
    for (int64_t step : steps) {
      if (reads++ > 64) return 0;
      auto v = t.Value(name, step);
      if (v.ok() && v->dtype != trainscope::DType::kString && v->nbytes() < (size_t{1} << 24)) {
        (void)trainscope::ComputeStats(v->view());
      }
      (void)t.ReductionValue(name, step, trainscope::Reduction{});
      (void)t.SavedReductions(name, step);
      (void)t.Shape(name, step);
      (void)t.TensorWorkers(name, step);
    }
  }
  for (const std::string& damaged : t.DamagedIndexFiles()) {
    Require(damaged.find("index/") != std::string::npos, "a damaged index file is not named");
  }
  return 0;
}
