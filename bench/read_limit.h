// The memory-read limit the benchmarks print beside their figures: every byte loaded once with
// AVX2 into four independent accumulators (no dependency chain, no arithmetic worth the name),
// so the figure is what the memory (or cache) delivers to one core. Header-only, for bench/.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace trainscope::bench {

inline bool HasAvx2() { return __builtin_cpu_supports("avx2"); }

// XOR of every 32-byte word of data[0, n) (any alignment); REQUIRES: HasAvx2().
__attribute__((target("avx2"))) inline uint64_t ReadAll(const void* data, size_t n) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const auto* p = reinterpret_cast<const __m256i*>(bytes + i);
    a0 = _mm256_xor_si256(a0, _mm256_loadu_si256(p));
    a1 = _mm256_xor_si256(a1, _mm256_loadu_si256(p + 1));
    a2 = _mm256_xor_si256(a2, _mm256_loadu_si256(p + 2));
    a3 = _mm256_xor_si256(a3, _mm256_loadu_si256(p + 3));
  }
  const __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  uint64_t acc = static_cast<uint64_t>(_mm256_extract_epi64(a, 0) ^ _mm256_extract_epi64(a, 3));
  for (; i < n; ++i) acc ^= bytes[i];
  return acc;
}

}  // namespace trainscope::bench
