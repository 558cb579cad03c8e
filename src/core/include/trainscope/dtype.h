// Element types of tensors, and their mapping to TensorFlow's DataType enum (the wire format).
//
// Every dtype smdebug writes is readable here (smdebug itself cannot read int16, uint16, uint32,
// uint64 or complex64, and reads int8 as uint8); bfloat16 is added. Half and bfloat16 are stored
// as their raw 16-bit patterns; HalfToFloat/BFloat16ToFloat convert one element.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace trainscope {

enum class DType : uint8_t {
  kInvalid = 0,
  kF16,
  kBF16,
  kF32,
  kF64,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kU16,
  kU32,
  kU64,
  kBool,
  kComplex64,
  kComplex128,
  kString,  // one UTF-8 string per element (TensorProto.string_val); 1-D only
};

// Bytes per element; 0 for kString and kInvalid.
size_t DTypeSize(DType t);
// numpy-style name: "float16", "bfloat16", "float32", ..., "bool", "complex64", "string".
std::string_view DTypeName(DType t);
// Inverse of DTypeName; nullopt for an unknown name.
std::optional<DType> DTypeFromName(std::string_view name);
bool IsFloating(DType t);  // f16, bf16, f32, f64
bool IsComplex(DType t);

// TensorFlow DataType enum values (tensorflow/core/framework/types.proto), as on the wire.
namespace tf_dtype {
inline constexpr int kInvalid = 0;
inline constexpr int kFloat = 1;
inline constexpr int kDouble = 2;
inline constexpr int kInt32 = 3;
inline constexpr int kUint8 = 4;
inline constexpr int kInt16 = 5;
inline constexpr int kInt8 = 6;
inline constexpr int kString = 7;
inline constexpr int kComplex64 = 8;
inline constexpr int kInt64 = 9;
inline constexpr int kBool = 10;
inline constexpr int kBfloat16 = 14;
inline constexpr int kUint16 = 17;
inline constexpr int kComplex128 = 18;
inline constexpr int kHalf = 19;
inline constexpr int kUint32 = 22;
inline constexpr int kUint64 = 23;
}  // namespace tf_dtype

// TF enum for a dtype (kString -> 0 = DT_INVALID, as smdebug writes strings).
int ToTfDataType(DType t);
// DType for a TF enum; nullopt for an enum we cannot decode (quantized types, resources...).
// 0 (DT_INVALID) maps to kString, because smdebug writes strings with dtype left 0.
std::optional<DType> FromTfDataType(int tf_enum);

float HalfToFloat(uint16_t h);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToHalf(float f);      // round to nearest even
uint16_t FloatToBFloat16(float f);  // round to nearest even

}  // namespace trainscope
