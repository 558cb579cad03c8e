// Hand-written protobuf wire-format encoder and decoder for the few messages of an event file
// (private to the store module; docs/formats/events.md). No libprotobuf.
//
// Messages (field numbers as in TensorFlow and smdebug's copies of its protos):
//   Event{wall_time=1 double, step=2 int64, file_version=3 string, summary=5 Summary}
//   Summary{value=1 repeated Value}
//   Value{tag=1, simple_value=2 float, histo=5 HistogramProto, tensor=8 TensorProto,
//         metadata=9 SummaryMetadata}
//   SummaryMetadata{plugin_data=1 repeated PluginData{plugin_name=1, content=2}}
//   TensorProto{dtype=1, tensor_shape=2, tensor_content=4, float_val=5, double_val=6, int_val=7,
//               string_val=8, scomplex_val=9, int64_val=10, bool_val=11, dcomplex_val=12,
//               half_val=13, uint32_val=16, uint64_val=17}
//   TensorShapeProto{dim=2 repeated Dim{size=1, name=2}}
//   HistogramProto{min=1, max=2, num=3, sum=4, sum_squares=5, bucket_limit=6, bucket=7}
//
// Encoding a tensor event is zero-copy friendly: tensor_content is the last field of every
// enclosing message, so a payload is [prefix][tensor bytes] and the writer can hand the tensor
// bytes to writev without copying them into the prefix. The prefix also pads (with an unknown
// field, skipped by every protobuf parser) so that the tensor bytes start at an aligned file
// offset, which lets a reader use them in place from a memory map.
//
// Decoding returns views into the input (strings, tensor_content); the input must outlive them.
// Malformed input gives Corruption naming `context` and the payload byte offset. Unknown fields
// are skipped; a known field with the wrong wire type is Corruption.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/dtype.h"
#include "trainscope/modes.h"
#include "trainscope/status.h"
#include "trainscope/tensor.h"

namespace trainscope::event_codec {

// ---------------------------------------------------------------------------------------------
// Encoding

// What a tensor event says besides the tensor bytes.
struct TensorEventSpec {
  double wall_time = 0;  // seconds since the epoch
  int64_t step = 0;      // global step
  Mode mode = Mode::kGlobal;
  int64_t mode_step = 0;
  std::string_view tag;           // tensor name
  DType dtype = DType::kInvalid;  // REQUIRES: not kString (use AppendStringTensorEvent)
  std::span<const int64_t> shape;
};

// Tensor bytes at or above this size start at a kLargeContentAlignment-aligned file offset;
// smaller ones at a multiple of their element size (at most 8).
inline constexpr uint64_t kLargeContentThreshold = 4096;
inline constexpr uint64_t kLargeContentAlignment = 64;

// Appends to *out the payload bytes that precede `content_size` bytes of tensor content, for a
// payload that will start at byte `payload_file_offset` of its file (pass 0 when the position
// is unknown; the only effect is the alignment of the content). The payload is then
// [appended bytes][content]. Returns the number of bytes appended.
size_t AppendTensorEventPrefix(const TensorEventSpec& spec, uint64_t content_size,
                               uint64_t payload_file_offset, std::string* out);
// Convenience: the whole payload (prefix then content), content aligned relative to offset 0.
std::string EncodeTensorEvent(const TensorEventSpec& spec, std::string_view content);

// A whole kString tensor event: dtype left 0 (DT_INVALID) and one string_val per element, as
// smdebug writes strings. spec.dtype is ignored. REQUIRES: NumElements(spec.shape) ==
// strings.size().
void AppendStringTensorEvent(const TensorEventSpec& spec, std::span<const std::string_view> strings,
                             std::string* out);

// Event{wall_time, file_version} — the first record of a TensorBoard file ("brain.Event:2").
std::string EncodeFileVersionEvent(double wall_time, std::string_view file_version);
// Event{wall_time, step, summary{value{tag, simple_value}}}.
std::string EncodeScalarEvent(double wall_time, int64_t step, std::string_view tag, float value);

struct HistogramData {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // upper edge of each bucket
  std::vector<double> bucket;        // count of each bucket
};
// Event{wall_time, step, summary{value{tag, histo}}}.
std::string EncodeHistogramEvent(double wall_time, int64_t step, std::string_view tag,
                                 const HistogramData& h);

// ---------------------------------------------------------------------------------------------
// Decoding

struct PluginDataView {
  std::string_view plugin_name;
  std::string_view content;
};

struct TensorProtoView {
  int dtype = 0;               // TF DataType enum value
  std::vector<int64_t> shape;  // dim sizes
  bool has_content = false;
  std::string_view tensor_content;  // view into the decoded payload
  std::vector<std::string_view> string_val;
  // Fallback values (used when tensor_content is absent).
  std::vector<float> float_val;
  std::vector<double> double_val;
  std::vector<int32_t> int_val;
  std::vector<int64_t> int64_val;
  std::vector<uint8_t> bool_val;
  std::vector<int32_t> half_val;    // 16-bit patterns of f16 or bf16
  std::vector<float> scomplex_val;  // re, im pairs
  std::vector<double> dcomplex_val;
  std::vector<uint32_t> uint32_val;
  std::vector<uint64_t> uint64_val;
};

struct SummaryValueView {
  enum class Kind { kNone, kSimpleValue, kHisto, kTensor };
  std::string_view tag;
  std::vector<PluginDataView> plugin_data;
  Kind kind = Kind::kNone;  // the `value` oneof (the last one set wins, as in protobuf)
  float simple_value = 0;
  HistogramData histo;
  TensorProtoView tensor;
};

struct EventView {
  double wall_time = 0;
  int64_t step = 0;
  std::optional<std::string_view> file_version;
  bool has_summary = false;
  std::vector<SummaryValueView> values;
};

// Decodes one Event payload. `context` (e.g. "events/.../x.tfevents, record at byte 120") starts
// every error message.
Result<EventView> DecodeEvent(std::string_view payload, std::string_view context);

// Mode and mode step from smdebug's plugin data; missing entries mean GLOBAL and mode_step =
// event_step. Corruption if an entry does not parse.
struct ModeInfo {
  Mode mode = Mode::kGlobal;
  int64_t mode_step = 0;
};
Result<ModeInfo> ModeFromPluginData(std::span<const PluginDataView> plugin_data, int64_t event_step,
                                    std::string_view context);

// Builds a Tensor from a decoded TensorProto. Numeric tensors with tensor_content point straight
// into it (no copy) and hold `keepalive`, which must own the decoded payload's bytes; fallback
// values (float_val...) are copied into a new buffer (fewer values than elements repeat the last
// one, none means zeros, as TensorFlow does). Errors: NotSupported for a dtype trainscope cannot
// decode, Corruption when sizes disagree.
Result<Tensor> TensorFromProto(const TensorProtoView& t, std::shared_ptr<const void> keepalive,
                               std::string_view context);

}  // namespace trainscope::event_codec
