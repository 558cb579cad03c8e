// TensorFromProto (event_codec.h): a Tensor from a decoded TensorProto.
#include <cstring>
#include <memory>

#include "store/event_codec.h"

namespace trainscope::event_codec {

namespace {

Status SizeError(std::string_view context, const std::string& what) {
  return Status::Corruption(std::string(context) + ": tensor " + what);
}

// Fills `n` elements of `out` from `vals` (TensorFlow's rule: fewer values repeat the last one,
// none means zeros). `put(i, value)` stores one element.
template <typename V, typename Put>
Status Fill(const std::vector<V>& vals, int64_t n, int64_t per_element, std::string_view context,
            std::string_view field, Put put) {
  const int64_t have = static_cast<int64_t>(vals.size()) / per_element;
  if (have > n || static_cast<int64_t>(vals.size()) % per_element != 0) {
    return SizeError(context, "has " + std::to_string(vals.size()) + " " + std::string(field) +
                                  " values for " + std::to_string(n) + " elements");
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t src = have == 0 ? -1 : std::min(i, have - 1);
    for (int64_t k = 0; k < per_element; ++k) {
      put(i * per_element + k, src < 0 ? V{} : vals[src * per_element + k]);
    }
  }
  return Status::OK();
}

template <typename T, typename V>
Status FillAs(const std::vector<V>& vals, int64_t n, std::string_view context,
              std::string_view field, char* out, int64_t per_element = 1) {
  return Fill(vals, n, per_element, context, field, [out](int64_t i, V v) {
    const T t = static_cast<T>(v);
    std::memcpy(out + i * sizeof(T), &t, sizeof(T));
  });
}

}  // namespace

Result<Tensor> TensorFromProto(const TensorProtoView& t, std::shared_ptr<const void> keepalive,
                               std::string_view context) {
  std::optional<DType> dtype = FromTfDataType(t.dtype);
  if (!dtype) {
    return Status::NotSupported(std::string(context) + ": tensor has TensorFlow dtype enum " +
                                std::to_string(t.dtype) + ", which trainscope cannot decode");
  }
  Tensor out;
  out.dtype = *dtype;
  out.shape = t.shape;
  for (int64_t d : out.shape) {
    if (d < 0) return SizeError(context, "has a negative dimension " + std::to_string(d));
  }
  // Element count with an overflow guard (a corrupt shape must not wrap around).
  int64_t n = 1;
  for (int64_t d : out.shape) {
    if (d != 0 && n > (int64_t{1} << 62) / d) return SizeError(context, "shape is absurdly large");
    n *= d;
  }
  if (out.dtype == DType::kString) {
    if (static_cast<int64_t>(t.string_val.size()) != n) {
      return SizeError(context, "has " + std::to_string(t.string_val.size()) +
                                    " strings for shape " + ShapeToString(out.shape));
    }
    out.strings.assign(t.string_val.begin(), t.string_val.end());
    return out;
  }
  const size_t esize = DTypeSize(out.dtype);
  if (t.has_content) {
    if (t.tensor_content.size() / esize != static_cast<uint64_t>(n) ||
        t.tensor_content.size() % esize != 0) {
      return SizeError(context, "content has " + std::to_string(t.tensor_content.size()) +
                                    " bytes but shape " + ShapeToString(out.shape) + " of " +
                                    std::string(DTypeName(out.dtype)) + " needs " +
                                    std::to_string(n * static_cast<int64_t>(esize)));
    }
    out.data = t.tensor_content.data();
    out.keepalive = std::move(keepalive);
    return out;
  }
  // Fallback: typed repeated fields.
  if (static_cast<uint64_t>(n) > (uint64_t{1} << 40) / esize) {
    return SizeError(context,
                     "shape " + ShapeToString(out.shape) + " has no content and is too large");
  }
  std::shared_ptr<char[]> buf(new char[std::max<size_t>(1, n * esize)]);
  char* p = buf.get();
  Status s;
  switch (out.dtype) {
    case DType::kF32:
      s = FillAs<float>(t.float_val, n, context, "float_val", p);
      break;
    case DType::kF64:
      s = FillAs<double>(t.double_val, n, context, "double_val", p);
      break;
    case DType::kI8:
      s = FillAs<int8_t>(t.int_val, n, context, "int_val", p);
      break;
    case DType::kI16:
      s = FillAs<int16_t>(t.int_val, n, context, "int_val", p);
      break;
    case DType::kI32:
      s = FillAs<int32_t>(t.int_val, n, context, "int_val", p);
      break;
    case DType::kU8:
      s = FillAs<uint8_t>(t.int_val, n, context, "int_val", p);
      break;
    case DType::kU16:
      s = FillAs<uint16_t>(t.int_val, n, context, "int_val", p);
      break;
    case DType::kI64:
      s = FillAs<int64_t>(t.int64_val, n, context, "int64_val", p);
      break;
    case DType::kU32:
      s = FillAs<uint32_t>(t.uint32_val, n, context, "uint32_val", p);
      break;
    case DType::kU64:
      s = FillAs<uint64_t>(t.uint64_val, n, context, "uint64_val", p);
      break;
    case DType::kBool:
      s = FillAs<bool>(t.bool_val, n, context, "bool_val", p);
      break;
    case DType::kF16:
    case DType::kBF16:
      s = FillAs<uint16_t>(t.half_val, n, context, "half_val", p);
      break;
    case DType::kComplex64:
      s = FillAs<float>(t.scomplex_val, n, context, "scomplex_val", p, 2);
      break;
    case DType::kComplex128:
      s = FillAs<double>(t.dcomplex_val, n, context, "dcomplex_val", p, 2);
      break;
    default:
      return Status::NotSupported(std::string(context) + ": cannot decode dtype " +
                                  std::string(DTypeName(out.dtype)));
  }
  TS_RETURN_IF_ERROR(s);
  out.data = buf.get();
  out.keepalive = std::move(buf);
  return out;
}

}  // namespace trainscope::event_codec
