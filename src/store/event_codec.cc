#include "store/event_codec.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "store/wire_format.h"
#include "trainscope/trial_format.h"

namespace trainscope::event_codec {

using wire::kFixed32;
using wire::kFixed64;
using wire::kLen;
using wire::kVarint;
using wire::LenFieldSize;
using wire::PutDoubleField;
using wire::PutFloatField;
using wire::PutLenHeader;
using wire::PutVarint;
using wire::PutVarintField;
using wire::Tag;
using wire::VarintSize;

namespace {

// Field numbers.
namespace event_f {
constexpr int kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5;
}
namespace summary_f {
constexpr int kValue = 1;
}
namespace value_f {
constexpr int kTag = 1, kSimpleValue = 2, kHisto = 5, kTensor = 8, kMetadata = 9;
}
namespace meta_f {
constexpr int kPluginData = 1;
}
namespace plugin_f {
constexpr int kName = 1, kContent = 2;
}
namespace tensor_f {
constexpr int kDtype = 1, kShape = 2, kContent = 4, kFloatVal = 5, kDoubleVal = 6, kIntVal = 7,
              kStringVal = 8, kScomplexVal = 9, kInt64Val = 10, kBoolVal = 11, kDcomplexVal = 12,
              kHalfVal = 13, kUint32Val = 16, kUint64Val = 17;
// Unknown to TensorFlow and smdebug: carries the alignment padding before tensor_content.
constexpr int kPadding = 1000;
}  // namespace tensor_f
namespace shape_f {
constexpr int kDim = 2;
}
namespace dim_f {
constexpr int kSize = 1;
}
namespace histo_f {
constexpr int kMin = 1, kMax = 2, kNum = 3, kSum = 4, kSumSquares = 5, kBucketLimit = 6,
              kBucket = 7;
}

// ----- encoding helpers

struct PluginStrings {
  std::string mode_step;
  std::string mode;
};

PluginStrings MakePluginStrings(const TensorEventSpec& spec) {
  return {std::to_string(spec.mode_step), std::to_string(static_cast<int>(spec.mode))};
}

size_t PluginDataSize(std::string_view name, std::string_view content) {
  return LenFieldSize(plugin_f::kName, name.size()) +
         LenFieldSize(plugin_f::kContent, content.size());
}

size_t MetadataSize(const PluginStrings& ps) {
  return LenFieldSize(meta_f::kPluginData,
                      PluginDataSize(trial_format::kPluginModeStep, ps.mode_step)) +
         LenFieldSize(meta_f::kPluginData, PluginDataSize(trial_format::kPluginMode, ps.mode));
}

void PutPluginData(std::string_view name, std::string_view content, std::string* out) {
  PutLenHeader(meta_f::kPluginData, PluginDataSize(name, content), out);
  PutLenHeader(plugin_f::kName, name.size(), out);
  out->append(name);
  PutLenHeader(plugin_f::kContent, content.size(), out);
  out->append(content);
}

size_t DimSize(int64_t d) { return 1 + VarintSize(static_cast<uint64_t>(d)); }

size_t ShapeSize(std::span<const int64_t> shape) {
  size_t n = 0;
  for (int64_t d : shape) n += LenFieldSize(shape_f::kDim, DimSize(d));
  return n;
}

void PutShapeField(std::span<const int64_t> shape, std::string* out) {
  PutLenHeader(tensor_f::kShape, ShapeSize(shape), out);
  for (int64_t d : shape) {
    PutLenHeader(shape_f::kDim, DimSize(d), out);
    PutVarintField(dim_f::kSize, static_cast<uint64_t>(d), out);
  }
}

// Size of the Summary.Value that wraps a tensor message of `tensor_len` bytes.
size_t ValueSize(const TensorEventSpec& spec, const PluginStrings& ps, uint64_t tensor_len) {
  return LenFieldSize(value_f::kTag, spec.tag.size()) +
         LenFieldSize(value_f::kMetadata, MetadataSize(ps)) +
         LenFieldSize(value_f::kTensor, tensor_len);
}

// Size of everything of the event before the tensor message's own bytes.
size_t HeadSize(const TensorEventSpec& spec, const PluginStrings& ps, uint64_t tensor_len) {
  const uint64_t value_len = ValueSize(spec, ps, tensor_len);
  const uint64_t summary_len = LenFieldSize(summary_f::kValue, value_len);
  const uint64_t event_len = 9 + 1 + VarintSize(static_cast<uint64_t>(spec.step)) +
                             LenFieldSize(event_f::kSummary, summary_len);
  return event_len - tensor_len;
}

// Writes the event up to (and including) the tensor field's header.
void PutHead(const TensorEventSpec& spec, const PluginStrings& ps, uint64_t tensor_len,
             std::string* out) {
  const uint64_t value_len = ValueSize(spec, ps, tensor_len);
  const uint64_t summary_len = LenFieldSize(summary_f::kValue, value_len);
  PutDoubleField(event_f::kWallTime, spec.wall_time, out);
  PutVarintField(event_f::kStep, static_cast<uint64_t>(spec.step), out);
  PutLenHeader(event_f::kSummary, summary_len, out);
  PutLenHeader(summary_f::kValue, value_len, out);
  PutLenHeader(value_f::kTag, spec.tag.size(), out);
  out->append(spec.tag);
  PutLenHeader(value_f::kMetadata, MetadataSize(ps), out);
  PutPluginData(trial_format::kPluginModeStep, ps.mode_step, out);
  PutPluginData(trial_format::kPluginMode, ps.mode, out);
  PutLenHeader(value_f::kTensor, tensor_len, out);
}

// Bytes taken by a padding field of `pad` bytes (0, or 3..130).
constexpr size_t kPadTagSize = 2;  // VarintSize(Tag(1000, kLen))
bool ValidPad(size_t pad) {
  return pad == 0 || (pad >= kPadTagSize + 1 && pad <= kPadTagSize + 128);
}

void PutPadding(size_t pad, std::string* out) {
  if (pad == 0) return;
  PutLenHeader(tensor_f::kPadding, pad - kPadTagSize - 1, out);
  out->append(pad - kPadTagSize - 1, '\0');
}

// Tensor message bytes before tensor_content's data, with `pad` bytes of padding.
size_t TensorHeadSize(int tf_dtype, std::span<const int64_t> shape, size_t pad,
                      uint64_t content_size) {
  size_t n = tf_dtype != 0 ? 1 + VarintSize(static_cast<uint64_t>(tf_dtype)) : 0;
  n += LenFieldSize(tensor_f::kShape, ShapeSize(shape));
  n += pad;
  n += 1 + VarintSize(content_size);  // tensor_content tag + length
  return n;
}

uint64_t ContentAlignment(DType dtype, uint64_t content_size) {
  if (content_size >= kLargeContentThreshold) return kLargeContentAlignment;
  return std::min<uint64_t>(DTypeSize(dtype), 8);
}

}  // namespace

size_t AppendTensorEventPrefix(const TensorEventSpec& spec, uint64_t content_size,
                               uint64_t payload_file_offset, std::string* out) {
  const PluginStrings ps = MakePluginStrings(spec);
  const int tf_dtype = ToTfDataType(spec.dtype);
  auto prefix_size = [&](size_t pad) {
    const uint64_t tensor_head = TensorHeadSize(tf_dtype, spec.shape, pad, content_size);
    return HeadSize(spec, ps, tensor_head + content_size) + tensor_head;
  };
  size_t pad = 0;
  const uint64_t align = ContentAlignment(spec.dtype, content_size);
  if (align > 1 && (payload_file_offset + prefix_size(0)) % align != 0) {
    // Smallest valid padding that aligns the content (lengths may grow a byte as pad grows).
    for (size_t p = kPadTagSize + 1; p <= kPadTagSize + 1 + 2 * align && ValidPad(p); ++p) {
      if ((payload_file_offset + prefix_size(p)) % align == 0) {
        pad = p;
        break;
      }
    }
  }
  const size_t before = out->size();
  const uint64_t tensor_head = TensorHeadSize(tf_dtype, spec.shape, pad, content_size);
  out->reserve(before + HeadSize(spec, ps, tensor_head + content_size) + tensor_head);
  PutHead(spec, ps, tensor_head + content_size, out);
  if (tf_dtype != 0) PutVarintField(tensor_f::kDtype, static_cast<uint64_t>(tf_dtype), out);
  PutShapeField(spec.shape, out);
  PutPadding(pad, out);
  PutLenHeader(tensor_f::kContent, content_size, out);
  return out->size() - before;
}

std::string EncodeTensorEvent(const TensorEventSpec& spec, std::string_view content) {
  std::string out;
  AppendTensorEventPrefix(spec, content.size(), 0, &out);
  out.append(content);
  return out;
}

void AppendStringTensorEvent(const TensorEventSpec& spec, std::span<const std::string_view> strings,
                             std::string* out) {
  const PluginStrings ps = MakePluginStrings(spec);
  uint64_t tensor_len = LenFieldSize(tensor_f::kShape, ShapeSize(spec.shape));
  for (std::string_view s : strings) tensor_len += LenFieldSize(tensor_f::kStringVal, s.size());
  out->reserve(out->size() + HeadSize(spec, ps, tensor_len) + tensor_len);
  PutHead(spec, ps, tensor_len, out);
  PutShapeField(spec.shape, out);
  for (std::string_view s : strings) {
    PutLenHeader(tensor_f::kStringVal, s.size(), out);
    out->append(s);
  }
}

namespace {

// Event{wall_time, step, summary{value{<value_body>}}}.
std::string WrapValue(double wall_time, int64_t step, std::string_view value_body) {
  const uint64_t summary_len = LenFieldSize(summary_f::kValue, value_body.size());
  std::string out;
  out.reserve(32 + value_body.size());
  PutDoubleField(event_f::kWallTime, wall_time, &out);
  PutVarintField(event_f::kStep, static_cast<uint64_t>(step), &out);
  PutLenHeader(event_f::kSummary, summary_len, &out);
  PutLenHeader(summary_f::kValue, value_body.size(), &out);
  out.append(value_body);
  return out;
}

void PutPackedDoubles(int field, const std::vector<double>& v, std::string* out) {
  if (v.empty()) return;
  PutLenHeader(field, v.size() * 8, out);
  for (double d : v) wire::PutFixed64(wire::DoubleBits(d), out);
}

}  // namespace

std::string EncodeFileVersionEvent(double wall_time, std::string_view file_version) {
  std::string out;
  PutDoubleField(event_f::kWallTime, wall_time, &out);
  PutLenHeader(event_f::kFileVersion, file_version.size(), &out);
  out.append(file_version);
  return out;
}

std::string EncodeScalarEvent(double wall_time, int64_t step, std::string_view tag, float value) {
  std::string body;
  PutLenHeader(value_f::kTag, tag.size(), &body);
  body.append(tag);
  PutFloatField(value_f::kSimpleValue, value, &body);
  return WrapValue(wall_time, step, body);
}

std::string EncodeHistogramEvent(double wall_time, int64_t step, std::string_view tag,
                                 const HistogramData& h) {
  std::string histo;
  PutDoubleField(histo_f::kMin, h.min, &histo);
  PutDoubleField(histo_f::kMax, h.max, &histo);
  PutDoubleField(histo_f::kNum, h.num, &histo);
  PutDoubleField(histo_f::kSum, h.sum, &histo);
  PutDoubleField(histo_f::kSumSquares, h.sum_squares, &histo);
  PutPackedDoubles(histo_f::kBucketLimit, h.bucket_limit, &histo);
  PutPackedDoubles(histo_f::kBucket, h.bucket, &histo);
  std::string body;
  PutLenHeader(value_f::kTag, tag.size(), &body);
  body.append(tag);
  PutLenHeader(value_f::kHisto, histo.size(), &body);
  body.append(histo);
  return WrapValue(wall_time, step, body);
}

}  // namespace trainscope::event_codec
