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

#include <immintrin.h>

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

// The read limit: AVX2 loads into four independent accumulators (no dependency chain and no
// arithmetic worth the name), so the figure is what the memory (or cache) delivers to one core.
__attribute__((target("avx2"))) uint64_t ReadAll(const float* x, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  const auto* p = reinterpret_cast<const __m256i*>(x);
  size_t i = 0;
  for (; i + 32 <= n; i += 32, p += 4) {
    a0 = _mm256_xor_si256(a0, _mm256_loadu_si256(p));
    a1 = _mm256_xor_si256(a1, _mm256_loadu_si256(p + 1));
    a2 = _mm256_xor_si256(a2, _mm256_loadu_si256(p + 2));
    a3 = _mm256_xor_si256(a3, _mm256_loadu_si256(p + 3));
  }
  const __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  uint64_t acc = static_cast<uint64_t>(_mm256_extract_epi64(a, 0) ^ _mm256_extract_epi64(a, 3));
  for (; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, x + i, 4);
    acc ^= v;
  }
  return acc;
}

void BM_ReadBandwidth(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx2")) {
    state.SkipWithError("no AVX2 on this CPU");
    return;
  }
  auto x = Data(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ReadAll(x.data(), x.size()));
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
