#include "trainscope/crc32c.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "trainscope/helper_pool.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <emmintrin.h>
#include <nmmintrin.h>
#endif

namespace trainscope::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables, built at compile time.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
}
constexpr auto kTables = MakeTables();

#if defined(__x86_64__)
bool DetectSse42() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}

// One stream of crc32 instructions: latency-bound (3 cycles per 8 bytes). Used for the tail.
__attribute__((target("sse4.2"))) uint32_t ExtendSse42Simple(uint32_t crc, const uint8_t* p,
                                                             size_t n) {
  uint64_t c = crc;
  while (n && (reinterpret_cast<uintptr_t>(p) & 7)) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  while (n--) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  return static_cast<uint32_t>(c);
}

// Three independent streams hide the instruction's latency; their CRCs are merged with the
// "append n zero bytes" operator x^(8n) mod P, applied by a GF(2) multiplication.
// Multiplies two polynomials mod P (bit-reflected).
uint32_t GfMultiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; ++i) {
    if (a & 0x80000000u) product ^= b;
    a <<= 1;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(8n) mod P in reflected form: the operator that "appends n zero bytes" to a CRC state.
uint32_t ZerosOperator(size_t n) {
  uint32_t result = 0x80000000u;  // x^0
  uint32_t power = 0x00800000u;   // x^8
  size_t k = n;
  while (k) {
    if (k & 1) result = GfMultiply(result, power);
    power = GfMultiply(power, power);
    k >>= 1;
  }
  return result;
}

// The map crc -> crc * op is linear over GF(2), so it is 4 table lookups (one per byte).
struct ShiftTable {
  uint32_t t[4][256];
  explicit ShiftTable(uint32_t op) {
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) t[k][b] = GfMultiply(b << (8 * k), op);
    }
  }
  uint32_t operator()(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
  }
};

// Processes as many rounds of 3 interleaved lanes of `lane` bytes as fit, merging the lanes:
// crc(A|B|C) = shift(crc(A), |B|+|C|) ^ shift(crc0(B), |C|) ^ crc0(C), on raw register states
// (the caller applies the pre/post inversion).
template <size_t kLaneBytes>
__attribute__((target("sse4.2"))) uint64_t ThreeLanes(uint64_t c0, const uint8_t*& p, size_t& n) {
  static const ShiftTable kShift1(ZerosOperator(kLaneBytes));
  static const ShiftTable kShift2(ZerosOperator(2 * kLaneBytes));
  while (n >= 3 * kLaneBytes) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t* p1 = p + kLaneBytes;
    const uint8_t* p2 = p + 2 * kLaneBytes;
    for (size_t i = 0; i < kLaneBytes; i += 8) {
      uint64_t v0, v1, v2;
      std::memcpy(&v0, p + i, 8);
      std::memcpy(&v1, p1 + i, 8);
      std::memcpy(&v2, p2 + i, 8);
      c0 = _mm_crc32_u64(c0, v0);
      c1 = _mm_crc32_u64(c1, v1);
      c2 = _mm_crc32_u64(c2, v2);
    }
    c0 = kShift2(static_cast<uint32_t>(c0)) ^ kShift1(static_cast<uint32_t>(c1)) ^
         static_cast<uint32_t>(c2);
    p += 3 * kLaneBytes;
    n -= 3 * kLaneBytes;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = ThreeLanes<4096>(crc, p, n);
  c = ThreeLanes<256>(c, p, n);
  return ExtendSse42Simple(static_cast<uint32_t>(c), p, n);
}

// Copies n bytes (a multiple of 64) to a 16-byte aligned dst with non-temporal stores: the
// destination is not read for ownership nor pulled into the cache (11 GB/s against memcpy's 8 on
// the development machine). The caller fences (_mm_sfence) before another thread reads dst.
void CopyNonTemporal(uint8_t* d, const uint8_t* s, size_t n) {
  for (size_t i = 0; i < n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
}

const bool kHaveSse42 = DetectSse42();
#endif

// Copies in blocks small enough to stay in L1/L2 between the copy and the CRC that reads them
// back.
uint32_t CopyThenExtend(uint32_t crc, uint8_t* d, const uint8_t* s, size_t n) {
  constexpr size_t kBlock = size_t{48} << 10;
  while (n > 0) {
    const size_t k = n < kBlock ? n : kBlock;
    std::memcpy(d, s, k);
    crc = Extend(crc, d, k);
    d += k;
    s += k;
    n -= k;
  }
  return crc;
}

uint32_t RawPortable(uint32_t c, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
        kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return c;
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n) {
  return ~RawPortable(~crc, static_cast<const uint8_t*>(data), n);
}

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  if (kHaveSse42) return ~ExtendSse42(~crc, static_cast<const uint8_t*>(data), n);
#endif
  return ExtendPortable(crc, data, n);
}

namespace {

uint32_t CopyAndExtendOneThread(uint32_t crc, void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
#if defined(__x86_64__)
  // Non-temporal stores pay off once the copy is bigger than the caches would hold usefully.
  // Block by block: the block is copied, then its CRC is computed from the source, which the
  // copy's loads left in L1/L2.
  constexpr size_t kNonTemporalMin = size_t{512} << 10;
  constexpr size_t kBlock = size_t{32} << 10;
  if (n >= kNonTemporalMin) {
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
    crc = CopyThenExtend(crc, d, s, head);
    d += head;
    s += head;
    n -= head;
    while (n >= kBlock) {
      CopyNonTemporal(d, s, kBlock);
      crc = Extend(crc, s, kBlock);
      d += kBlock;
      s += kBlock;
      n -= kBlock;
    }
    _mm_sfence();
  }
#endif
  return CopyThenExtend(crc, d, s, n);
}

}  // namespace

uint32_t Combine(uint32_t crc1, uint32_t crc2, size_t len2) {
  return GfMultiply(crc1, ZerosOperator(len2)) ^ crc2;
}

uint32_t CopyAndExtend(uint32_t crc, void* dst, const void* src, size_t n) {
  constexpr size_t kPiece = size_t{1} << 20;
  auto& pool = internal::HelperPool::Shared();
  if (n < 2 * kPiece || pool.threads() < 2) return CopyAndExtendOneThread(crc, dst, src, n);
  // Pieces of 1 MiB on the helper threads too, each with its own CRC, combined in order.
  const size_t pieces = (n + kPiece - 1) / kPiece;
  std::vector<uint32_t> crcs(pieces);
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  pool.Run(pieces, [&](size_t i) {
    const size_t off = i * kPiece;
    crcs[i] = CopyAndExtendOneThread(0, d + off, s + off, std::min(kPiece, n - off));
  });
  for (size_t i = 0; i < pieces; ++i) crc = Combine(crc, crcs[i], std::min(kPiece, n - i * kPiece));
  return crc;
}

bool HardwareAccelerated() {
#if defined(__x86_64__)
  return kHaveSse42;
#else
  return false;
#endif
}

}  // namespace trainscope::crc32c
