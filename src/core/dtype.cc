#include "trainscope/dtype.h"

#include <bit>
#include <cstring>

namespace trainscope {
namespace {

struct DTypeInfo {
  DType type;
  size_t size;
  std::string_view name;
  int tf;
};

constexpr DTypeInfo kInfos[] = {
    {DType::kInvalid, 0, "invalid", tf_dtype::kInvalid},
    {DType::kF16, 2, "float16", tf_dtype::kHalf},
    {DType::kBF16, 2, "bfloat16", tf_dtype::kBfloat16},
    {DType::kF32, 4, "float32", tf_dtype::kFloat},
    {DType::kF64, 8, "float64", tf_dtype::kDouble},
    {DType::kI8, 1, "int8", tf_dtype::kInt8},
    {DType::kI16, 2, "int16", tf_dtype::kInt16},
    {DType::kI32, 4, "int32", tf_dtype::kInt32},
    {DType::kI64, 8, "int64", tf_dtype::kInt64},
    {DType::kU8, 1, "uint8", tf_dtype::kUint8},
    {DType::kU16, 2, "uint16", tf_dtype::kUint16},
    {DType::kU32, 4, "uint32", tf_dtype::kUint32},
    {DType::kU64, 8, "uint64", tf_dtype::kUint64},
    {DType::kBool, 1, "bool", tf_dtype::kBool},
    {DType::kComplex64, 8, "complex64", tf_dtype::kComplex64},
    {DType::kComplex128, 16, "complex128", tf_dtype::kComplex128},
    {DType::kString, 0, "string", tf_dtype::kInvalid},
};

const DTypeInfo& Info(DType t) {
  auto i = static_cast<size_t>(t);
  return i < std::size(kInfos) ? kInfos[i] : kInfos[0];
}

}  // namespace

size_t DTypeSize(DType t) { return Info(t).size; }
std::string_view DTypeName(DType t) { return Info(t).name; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& i : kInfos) {
    if (i.name == name && i.type != DType::kInvalid) return i.type;
  }
  if (name == "half") return DType::kF16;
  if (name == "float") return DType::kF32;
  if (name == "double") return DType::kF64;
  return std::nullopt;
}

bool IsFloating(DType t) {
  return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64;
}
bool IsComplex(DType t) { return t == DType::kComplex64 || t == DType::kComplex128; }

int ToTfDataType(DType t) { return Info(t).tf; }

std::optional<DType> FromTfDataType(int tf_enum) {
  if (tf_enum == tf_dtype::kInvalid || tf_enum == tf_dtype::kString) return DType::kString;
  for (const auto& i : kInfos) {
    if (i.tf == tf_enum && i.type != DType::kInvalid && i.type != DType::kString) return i.type;
  }
  return std::nullopt;
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

float BFloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBFloat16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

uint16_t FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // overflow (incl. values rounding to inf) -> inf
  if (abs < 0x38800000u) {                        // subnormal or zero in half
    if (abs < 0x33000000u) return sign;           // rounds to zero
    uint32_t e = abs >> 23;
    uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // value = m * 2^(e-150) = (m >> shift) * 2^-24
    uint32_t r = m >> shift;
    uint32_t half_unit = 1u << (shift - 1);
    uint32_t rem = m & ((1u << shift) - 1);
    if (rem > half_unit || (rem == half_unit && (r & 1u))) ++r;  // round half to even
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u) - (0x70u << 23);  // rebias 127 -> 15
  return sign | static_cast<uint16_t>(r >> 13);
}

}  // namespace trainscope
