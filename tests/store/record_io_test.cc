#include "store/record_io.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainscope/crc32c.h"
#include "trainscope/trial_format.h"

namespace trainscope::record_io {
namespace {

using trial_format::kFramingOverhead;
using trial_format::kHeaderSize;
using trial_format::kMagicFooter;

std::vector<std::string> SamplePayloads() {
  std::string big(1000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + 3);
  return {"", "a", "hello record", big};
}

std::string BuildFile(const std::vector<std::string>& payloads, bool real_crc,
                      std::vector<uint64_t>* offsets = nullptr) {
  std::string file;
  for (const std::string& p : payloads) {
    if (offsets) offsets->push_back(file.size());
    AppendRecord(p, real_crc, &file);
  }
  return file;
}

TEST(RecordIoTest, MagicFooterIsMaskedCrcOfItsSource) {
  const auto src = trial_format::kMagicFooterSource;
  EXPECT_EQ(crc32c::Mask(crc32c::Value(src.data(), src.size())), kMagicFooter);
}

TEST(RecordIoTest, HeaderLayout) {
  std::string h;
  AppendRecordHeader(0x0102030405060708ull, &h);
  ASSERT_EQ(h.size(), kHeaderSize);
  EXPECT_EQ(static_cast<uint8_t>(h[0]), 0x08);  // little-endian
  EXPECT_EQ(static_cast<uint8_t>(h[7]), 0x01);
  EXPECT_EQ(DecodeFixed64(h.data()), 0x0102030405060708ull);
  EXPECT_EQ(DecodeFixed32(h.data() + 8), crc32c::Mask(crc32c::Value(h.data(), 8)));
}

TEST(RecordIoTest, RoundTripBothFooters) {
  for (bool real_crc : {false, true}) {
    const auto payloads = SamplePayloads();
    std::vector<uint64_t> offsets;
    const std::string file = BuildFile(payloads, real_crc, &offsets);
    RecordIterator it(file, "f.tfevents");
    RecordRef r;
    size_t i = 0;
    while (it.Next(&r)) {
      ASSERT_LT(i, payloads.size());
      EXPECT_EQ(r.payload, payloads[i]);
      EXPECT_EQ(r.offset, offsets[i]);
      EXPECT_EQ(r.length, payloads[i].size() + kFramingOverhead);
      EXPECT_EQ(r.magic_footer, !real_crc);
      // Random access by offset gives the same record.
      auto again = ParseRecordAt(file, offsets[i], "f.tfevents");
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(again->payload, payloads[i]);
      ++i;
    }
    EXPECT_TRUE(it.status().ok()) << it.status().ToString();
    EXPECT_EQ(i, payloads.size());
    if (real_crc) {
      const std::string& last = payloads.back();
      EXPECT_EQ(DecodeFixed32(file.data() + file.size() - 4),
                crc32c::Mask(crc32c::Value(last.data(), last.size())));
    } else {
      EXPECT_EQ(DecodeFixed32(file.data() + file.size() - 4), kMagicFooter);
    }
  }
}

TEST(RecordIoTest, TruncationAtEveryByteIsCorruptionNamingTheOffset) {
  std::vector<uint64_t> offsets;
  const std::string file = BuildFile(SamplePayloads(), false, &offsets);
  for (size_t len = 0; len < file.size(); ++len) {
    // Copy so that ASan catches any read past the truncated end.
    const std::string cut = file.substr(0, len);
    RecordIterator it(cut, "cut.tfevents");
    RecordRef r;
    size_t n = 0;
    while (it.Next(&r)) ++n;
    size_t whole = 0;  // records entirely inside the cut
    while (whole < offsets.size() &&
           offsets[whole] + SamplePayloads()[whole].size() + kFramingOverhead <= len) {
      ++whole;
    }
    EXPECT_EQ(n, whole) << "len " << len;
    const bool at_boundary = whole == offsets.size() || offsets[whole] == len;
    if (at_boundary) {
      EXPECT_TRUE(it.status().ok()) << "len " << len << ": " << it.status().ToString();
    } else {
      ASSERT_EQ(it.status().code(), StatusCode::kCorruption) << "len " << len;
      EXPECT_NE(it.status().message().find("byte offset " + std::to_string(offsets[whole])),
                std::string::npos)
          << it.status().message();
      EXPECT_NE(it.status().message().find("cut.tfevents"), std::string::npos);
    }
  }
}

TEST(RecordIoTest, EverySingleByteChangeIsCaughtWithRealCrc) {
  const std::string file = BuildFile({"abc", "payload two"}, true);
  for (size_t i = 0; i < file.size(); ++i) {
    for (uint8_t flip : {0x01, 0x80, 0xff}) {
      std::string bad = file;
      bad[i] = static_cast<char>(bad[i] ^ flip);
      RecordIterator it(bad, "bad");
      RecordRef r;
      while (it.Next(&r)) {
      }
      EXPECT_EQ(it.status().code(), StatusCode::kCorruption) << "byte " << i;
    }
  }
}

TEST(RecordIoTest, LengthHeaderChangesAreCaughtWithMagicFooter) {
  const std::string file = BuildFile({"abc"}, false);
  for (size_t i = 0; i < kHeaderSize; ++i) {
    std::string bad = file;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    auto r = ParseRecordAt(bad, 0, "bad");
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << "byte " << i;
  }
  std::string bad_footer = file;
  bad_footer.back() ^= 1;
  EXPECT_EQ(ParseRecordAt(bad_footer, 0, "bad").status().code(), StatusCode::kCorruption);
}

TEST(RecordIoTest, AbsurdLengthWithValidCrcIsCorruption) {
  for (uint64_t len : {~uint64_t{0}, uint64_t{1} << 63, uint64_t{1} << 40, uint64_t{5}}) {
    std::string file;
    AppendRecordHeader(len, &file);
    file += "abcd";  // fewer bytes than claimed plus footer
    auto r = ParseRecordAt(file, 0, "absurd");
    ASSERT_EQ(r.status().code(), StatusCode::kCorruption) << len;
    EXPECT_NE(r.status().message().find("byte offset 0"), std::string::npos);
  }
}

TEST(RecordIoTest, OffsetPastEndIsCorruption) {
  const std::string file = BuildFile({"x"}, false);
  EXPECT_EQ(ParseRecordAt(file, file.size() + 1, "f").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseRecordAt(file, ~uint64_t{0}, "f").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseRecordAt(file, file.size(), "f").status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace trainscope::record_io
