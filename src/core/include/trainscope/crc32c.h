// CRC32C (Castagnoli), as used by TFRecord framing, and the masking TensorFlow applies.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at start-up), else a
// slicing-by-8 table. Both give identical results; tests check them against each other and
// against the standard check value (Crc32c("123456789") == 0xE3069283).
// Thread safety: all functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trainscope::crc32c {

// Returns the CRC32C of data[0, n) continuing from `crc` (the CRC of the bytes before it).
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// Copies src[0, n) to dst (which must not overlap it) and returns Extend(crc, src, n), in one
// pass: the pair costs about what the copy alone costs (memory, not the crc32 instruction, is
// the limit). Copies of 512 KiB and more use non-temporal stores (dst is not pulled into the
// cache; a fence at the end makes the bytes visible to other threads as usual); smaller ones go
// block by block, each block's CRC read back from cache right after it is copied. Copies of
// 2 MiB and more go in 1 MiB pieces over the helper threads too (TRAINSCOPE_THREADS, see
// trainscope/helper_pool.h), their CRCs joined with Combine.
uint32_t CopyAndExtend(uint32_t crc, void* dst, const void* src, size_t n);

// The CRC of A followed by B from crc1 = Value(A), crc2 = Value(B) and len2 = |B|.
uint32_t Combine(uint32_t crc1, uint32_t crc2, size_t len2);

// The portable implementation, always available (for tests and benchmarks).
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
// True if Extend uses the hardware instruction on this CPU.
bool HardwareAccelerated();

inline constexpr uint32_t kMaskDelta = 0xa282ead8u;
// TFRecord's masked CRC: rotate right by 15 bits and add a constant.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace trainscope::crc32c
