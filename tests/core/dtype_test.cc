#include "trainscope/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "trainscope/modes.h"

namespace trainscope {
namespace {

TEST(DTypeTest, SizesNamesAndTfEnums) {
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kComplex128), 16u);
  EXPECT_EQ(DTypeName(DType::kU32), "uint32");
  EXPECT_EQ(DTypeFromName("bfloat16"), DType::kBF16);
  EXPECT_EQ(DTypeFromName("nope"), std::nullopt);
  EXPECT_EQ(ToTfDataType(DType::kF16), 19);
  EXPECT_EQ(ToTfDataType(DType::kI8), 6);
  EXPECT_EQ(ToTfDataType(DType::kBF16), 14);
  // int8 decodes as int8 (smdebug decodes it as uint8).
  EXPECT_EQ(FromTfDataType(6), DType::kI8);
  EXPECT_EQ(FromTfDataType(0), DType::kString);
  EXPECT_EQ(FromTfDataType(11), std::nullopt);  // DT_QINT8: not decodable
  for (int t = 0; t <= static_cast<int>(DType::kComplex128); ++t) {
    auto d = static_cast<DType>(t);
    if (d == DType::kInvalid) continue;
    EXPECT_EQ(FromTfDataType(ToTfDataType(d)), d) << DTypeName(d);
    EXPECT_EQ(DTypeFromName(DTypeName(d)), d);
  }
}

TEST(DTypeTest, HalfKnownValues) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);                  // rounds to inf
  EXPECT_EQ(FloatToHalf(5.960464477539063e-08f), 0x0001);    // smallest subnormal
  EXPECT_EQ(FloatToHalf(2.98023223876953125e-08f), 0x0000);  // exact tie rounds to even (0)
  EXPECT_EQ(FloatToHalf(0.333333343f), 0x3555);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x0001), 5.960464477539063e-08f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0xFC00)));
}

TEST(DTypeTest, HalfRoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), h) << std::hex << h;
  }
}

TEST(DTypeTest, BFloat16RoundTripsAndRounds) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = BFloat16ToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToBFloat16(f), b);
  }
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  // 1 + 2^-8 is a tie between 1.0 and 1 + 2^-7: rounds to even (1.0).
  EXPECT_EQ(FloatToBFloat16(1.00390625f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16(1.01171875f), 0x3F82);
}

TEST(ModesTest, NamesAndParsing) {
  EXPECT_EQ(ModeName(Mode::kEval), "EVAL");
  EXPECT_EQ(ModeFromName("ModeKeys.TRAIN"), Mode::kTrain);
  EXPECT_EQ(ModeFromName("predict"), Mode::kPredict);
  EXPECT_EQ(ModeFromName("4"), Mode::kGlobal);
  EXPECT_EQ(ModeFromName("TEST"), std::nullopt);
}

}  // namespace
}  // namespace trainscope
