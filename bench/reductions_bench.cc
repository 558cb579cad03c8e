// Reductions of a float32 tensor (the hook's per-step work when reductions are saved), beside the
// limits they chase: a plain read of the same bytes (memory-read bandwidth) and memcpy.
//   fast/<n>      ComputeStats with what "min, max, mean, abs_mean, l2" need (the AVX2 kernel)
//   fast_std/<n>  the same plus std/variance (second, cache-resident pass per block)
//   fast_all/<n>  every statistic but products (zero counts and |x| extremes too)
//   portable/<n>  the portable loop (every statistic, products included)
// Sizes: 64 K floats (in cache) and 2.63 M floats (bench/overhead.py's MLP, out of cache).
// Goal (issue: capture): reductions every step add at most 3 % to a training step; the kernel
// should run near the read bandwidth.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

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
  auto x = Data(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    uint64_t acc = 0;
    const char* p = reinterpret_cast<const char*>(x.data());
    for (size_t i = 0; i + 8 <= x.size() * 4; i += 8) {
      uint64_t v;
      std::memcpy(&v, p + i, 8);
      acc += v;
    }
    benchmark::DoNotOptimize(acc);
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

#define SIZES ->Arg(64 << 10)->Arg(2630000)
BENCHMARK(BM_Fast) SIZES;
BENCHMARK(BM_FastStd) SIZES;
BENCHMARK(BM_FastAll) SIZES;
BENCHMARK(BM_Portable) SIZES;
BENCHMARK(BM_ReadBandwidth) SIZES;
BENCHMARK(BM_Memcpy) SIZES;

}  // namespace

BENCHMARK_MAIN();
