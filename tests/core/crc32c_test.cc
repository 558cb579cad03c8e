#include "trainscope/crc32c.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace trainscope::crc32c {
namespace {

TEST(Crc32cTest, StandardCheckValues) {
  EXPECT_EQ(Value("123456789", 9), 0xE3069283u);
  EXPECT_EQ(ExtendPortable(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(Value("", 0), 0u);
  // RFC 3720 B.4: 32 bytes of zeros and of 0xff.
  std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(Value(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Value(ones.data(), ones.size()), 0x62A8AB43u);
}

TEST(Crc32cTest, HardwareMatchesPortableAtEveryLengthAndAlignment) {
  std::mt19937 rng(42);
  std::vector<uint8_t> buf(70000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n < 70; ++n) lengths.push_back(n);
  for (size_t n : {4095, 4096, 12287, 12288, 12289, 24576 + 17, 65536}) lengths.push_back(n);
  for (size_t off = 0; off < 8; ++off) {
    for (size_t n : lengths) {
      ASSERT_EQ(Value(buf.data() + off, n), ExtendPortable(0, buf.data() + off, n))
          << "off=" << off << " n=" << n;
    }
  }
}

TEST(Crc32cTest, ExtendComposes) {
  std::string a = "hello, ", b = "trainscope";
  EXPECT_EQ(Extend(Value(a.data(), a.size()), b.data(), b.size()),
            Value((a + b).data(), a.size() + b.size()));
}

TEST(Crc32cTest, CopyAndExtendCopiesEveryByteAndMatchesExtend) {
  std::mt19937 rng(7);
  std::vector<uint8_t> src((size_t{5} << 20) + 64);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  // Lengths around the 48 KiB block and its lanes, at odd offsets on both sides.
  for (size_t n : {size_t{0}, size_t{1}, size_t{4097}, size_t{49151}, size_t{49152}, size_t{49153},
                   size_t{98304 + 13}, size_t{199990},
                   // the non-temporal path (>= 512 KiB): whole and partial 12 KiB rounds
                   size_t{512} << 10, (size_t{1} << 20) + 13,
                   // 1 MiB pieces over the helper threads (>= 2 MiB), the last one partial
                   size_t{3} << 20, (size_t{4} << 20) + 13}) {
    for (size_t off : {0, 3, 16}) {
      std::vector<uint8_t> dst(n + 16, 0xAB);
      const uint32_t seed = 0x1234u;
      const uint32_t got = CopyAndExtend(seed, dst.data() + off, src.data() + off, n);
      ASSERT_EQ(got, ExtendPortable(seed, src.data() + off, n)) << "n=" << n << " off=" << off;
      ASSERT_TRUE(std::equal(src.begin() + off, src.begin() + off + n, dst.begin() + off));
      for (size_t i = 0; i < off; ++i) ASSERT_EQ(dst[i], 0xAB) << "wrote before dst";
      for (size_t i = off + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xAB) << "wrote past n";
    }
  }
}

TEST(Crc32cTest, CombineJoinsTheCrcsOfTwoParts) {
  std::mt19937 rng(3);
  std::vector<uint8_t> data(300000);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{123457}, data.size()}) {
    const uint32_t a = Value(data.data(), cut);
    const uint32_t b = Value(data.data() + cut, data.size() - cut);
    EXPECT_EQ(Combine(a, b, data.size() - cut), Value(data.data(), data.size())) << "cut=" << cut;
  }
}

TEST(Crc32cTest, MaskRoundTripsAndMatchesSmdebugMagicFooter) {
  for (uint32_t v : {0u, 1u, 0xE3069283u, 0xffffffffu}) {
    EXPECT_EQ(Unmask(Mask(v)), v);
    EXPECT_NE(Mask(v), v);
  }
  // smdebug's events/ footer: masked CRC32C of the ASCII bytes "0x12345678".
  EXPECT_EQ(Mask(Value("0x12345678", 10)), 0x062DC0B3u);
}

}  // namespace
}  // namespace trainscope::crc32c
