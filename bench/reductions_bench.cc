// Reductions of a float32 tensor (the hook's per-step work when reductions are saved), beside the
// limits they chase: a plain read of the same bytes (memory-read bandwidth) and memcpy.
//   fast/<n>      ComputeStats with what "min, max, mean, abs_mean, l2" need (the AVX2 kernel)
//   fast_std/<n>  the same plus std/variance (second, cache-resident pass per block)
//   fast_all/<n>  every statistic but products (zero counts and |x| extremes too)
//   portable/<n>  the portable loop (every statistic, products included)
// Sizes: 64 K floats (in L2) and 2.63 M floats (bench/overhead.py's MLP; L3 here). Wall time:
// tensors above 64 K floats are reduced in chunks on the helper threads too (TRAINSCOPE_THREADS,
// the total; run with TRAINSCOPE_THREADS=1 for one core's figure).
// Goal (issue: capture): reductions every step add at most 3 % to a training step; the kernel
// should run near the read bandwidth.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "read_limit.h"
#include "trainscope/reductions.h"

namespace {

std::vector<float> Data(size_t n) {
  std::vector<float> x(n);
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 0.02f);
  for (auto& v : x) v = d(rng);
  return x;
}

trainscope::TensorView View(const std::vector<float>& x) {
  return {trainscope::DType::kF32, x.data(), {static_cast<int64_t>(x.size())}, {}, {}};
}

void Run(benchmark::State& state, trainscope::StatsNeeds needs, bool portable) {
  auto x = Data(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto s = portable ? trainscope::ComputeStatsPortable(View(x))
                      : trainscope::ComputeStats(View(x), needs);
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}

void BM_Fast(benchmark::State& s) { Run(s, {false, false, false, false, false}, false); }
void BM_FastStd(benchmark::State& s) { Run(s, {true, true, false, false, false}, false); }
void BM_FastAll(benchmark::State& s) { Run(s, {true, true, false, true, true}, false); }
void BM_Portable(benchmark::State& s) { Run(s, trainscope::StatsNeeds::All(), true); }

void BM_ReadBandwidth(benchmark::State& state) {
  if (!trainscope::bench::HasAvx2()) {
    state.SkipWithError("no AVX2 on this CPU");
    return;
  }
  auto x = Data(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(trainscope::bench::ReadAll(x.data(), x.size() * sizeof(float)));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}

void BM_Memcpy(benchmark::State& state) {
  auto x = Data(static_cast<size_t>(state.range(0)));
  std::vector<float> y(x.size());
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), x.size() * 4);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}

#define SIZES ->Arg(64 << 10)->Arg(2630000)->UseRealTime()
BENCHMARK(BM_Fast) SIZES;
BENCHMARK(BM_FastStd) SIZES;
BENCHMARK(BM_FastAll) SIZES;
BENCHMARK(BM_Portable) SIZES;
BENCHMARK(BM_ReadBandwidth) SIZES;
BENCHMARK(BM_Memcpy) SIZES;

}  // namespace

int main(int argc, char** argv) {
  const char* t = std::getenv("TRAINSCOPE_THREADS");
  benchmark::AddCustomContext("TRAINSCOPE_THREADS",
                              t != nullptr ? t : "(default: cores, at most 4)");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
