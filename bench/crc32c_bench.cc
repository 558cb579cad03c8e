// CRC32C throughput per core, beside the limits it chases: memcpy and a plain read of the
// same bytes (memory bandwidth), and the portable table implementation.
// Goal (issue: foundation): at least 10 GB/s per core with the hardware instruction; copy + CRC
// in one pass (crc32c::CopyAndExtend) at memcpy's speed.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "read_limit.h"
#include "trainscope/crc32c.h"

namespace {

std::vector<char> Buffer(size_t n) {
  std::vector<char> b(n);
  std::mt19937 rng(1);
  for (auto& c : b) c = static_cast<char>(rng());
  return b;
}

void BM_Crc32c(benchmark::State& state) {
  auto buf = Buffer(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(trainscope::crc32c::Value(buf.data(), buf.size()));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  state.SetLabel(trainscope::crc32c::HardwareAccelerated() ? "sse4.2" : "portable");
}

void BM_Crc32cPortable(benchmark::State& state) {
  auto buf = Buffer(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(trainscope::crc32c::ExtendPortable(0, buf.data(), buf.size()));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_Memcpy(benchmark::State& state) {
  auto buf = Buffer(static_cast<size_t>(state.range(0)));
  std::vector<char> dst(buf.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), buf.data(), buf.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// What the writer does with a copied tensor: copy it into the step's buffer and take its CRC in
// the same pass (goal: memcpy's speed). Fresh destinations each time over 64 MB, as for steps
// queued to the writer thread.
void BM_CopyAndCrc(benchmark::State& state) {
  auto buf = Buffer(static_cast<size_t>(state.range(0)));
  std::vector<char> dst(buf.size() * (state.range(0) >= (64 << 20) ? 1 : 4));
  size_t at = 0;
  for (auto _ : state) {
    if (at + buf.size() > dst.size()) at = 0;
    benchmark::DoNotOptimize(
        trainscope::crc32c::CopyAndExtend(0, dst.data() + at, buf.data(), buf.size()));
    at += buf.size();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// Reads every byte once (bench/read_limit.h): the memory-read bandwidth ceiling.
void BM_ReadBandwidth(benchmark::State& state) {
  if (!trainscope::bench::HasAvx2()) {
    state.SkipWithError("no AVX2 on this CPU");
    return;
  }
  auto buf = Buffer(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(trainscope::bench::ReadAll(buf.data(), buf.size()));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// 4 KB (a small tensor record), 1 MB (fits in L2/L3) and 64 MB (memory bound).
BENCHMARK(BM_Crc32c)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_Crc32cPortable)->Arg(1 << 20);
// Wall time: copies of 2 MiB and more use the helper threads too (TRAINSCOPE_THREADS=1: one core).
BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(4 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_CopyAndCrc)->Arg(1 << 20)->Arg(4 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_ReadBandwidth)->Arg(1 << 20)->Arg(64 << 20);

}  // namespace

BENCHMARK_MAIN();
