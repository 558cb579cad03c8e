// Cost of checking the stop signal, which the hook does at every step boundary.
// The limit it chases: one access(2) syscall on the same path (BM_RawAccess*), the floor for a
// file-based signal. Run: ./build/bench/stop_signal_bench
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "trainscope/stop_signal.h"
#include "trainscope/stop_signal_c.h"

namespace {

using trainscope::StopSignal;

// A trial folder with rule-output/ present, optionally with a stop file.
std::string MakeTrial(bool with_stop) {
  std::string templ = "/tmp/ts_stop_bench_XXXXXX";
  std::string dir = ::mkdtemp(templ.data());
  std::filesystem::create_directories(dir + "/rule-output");
  if (with_stop) {
    trainscope::StopRequest r;
    r.rule = "Bench";
    (void)StopSignal::Raise(nullptr, dir, r);
  }
  return dir;
}

void BM_CheckNoStop(benchmark::State& state) {
  std::string trial = MakeTrial(false);
  StopSignal signal(trial);
  for (auto _ : state) benchmark::DoNotOptimize(signal.Check());
  std::filesystem::remove_all(trial);
}
BENCHMARK(BM_CheckNoStop);

void BM_CheckStopPresent(benchmark::State& state) {
  std::string trial = MakeTrial(true);
  StopSignal signal(trial);
  for (auto _ : state) benchmark::DoNotOptimize(signal.Check());
  std::filesystem::remove_all(trial);
}
BENCHMARK(BM_CheckStopPresent);

void BM_CheckNoStopWithSmdebugVariable(benchmark::State& state) {
  std::string trial = MakeTrial(false);
  ::setenv("SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE", "rule_stop", 1);
  StopSignal signal(trial);
  ::unsetenv("SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE");
  for (auto _ : state) benchmark::DoNotOptimize(signal.Check());
  std::filesystem::remove_all(trial);
}
BENCHMARK(BM_CheckNoStopWithSmdebugVariable);

void BM_StaticCheckNoStop(benchmark::State& state) {
  std::string trial = MakeTrial(false);
  for (auto _ : state) benchmark::DoNotOptimize(StopSignal::Check(trial));
  std::filesystem::remove_all(trial);
}
BENCHMARK(BM_StaticCheckNoStop);

void BM_CHandleCheckNoStop(benchmark::State& state) {
  std::string trial = MakeTrial(false);
  trainscope_stop_signal* h = trainscope_stop_signal_open(trial.c_str());
  for (auto _ : state) benchmark::DoNotOptimize(trainscope_stop_signal_check(h));
  trainscope_stop_signal_close(h);
  std::filesystem::remove_all(trial);
}
BENCHMARK(BM_CHandleCheckNoStop);

// The floor: the bare syscalls on the same path.
void BM_RawAccessNoStop(benchmark::State& state) {
  std::string trial = MakeTrial(false);
  std::string path = StopSignal::PathFor(trial);
  for (auto _ : state) benchmark::DoNotOptimize(::access(path.c_str(), F_OK));
  std::filesystem::remove_all(trial);
}
BENCHMARK(BM_RawAccessNoStop);

void BM_RawStatNoStop(benchmark::State& state) {
  std::string trial = MakeTrial(false);
  std::string path = StopSignal::PathFor(trial);
  struct stat st;
  for (auto _ : state) benchmark::DoNotOptimize(::stat(path.c_str(), &st));
  std::filesystem::remove_all(trial);
}
BENCHMARK(BM_RawStatNoStop);

}  // namespace

BENCHMARK_MAIN();
