#include "store/event_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "store/wire_format.h"

namespace trainscope::event_codec {
namespace {

const DType kNumericDTypes[] = {DType::kF16,  DType::kBF16,      DType::kF32,       DType::kF64,
                                DType::kI8,   DType::kI16,       DType::kI32,       DType::kI64,
                                DType::kU8,   DType::kU16,       DType::kU32,       DType::kU64,
                                DType::kBool, DType::kComplex64, DType::kComplex128};

// Deterministic, dtype-valid bytes (bools are 0/1).
std::string SampleBytes(DType t, int64_t n, uint32_t seed = 1) {
  std::string s(static_cast<size_t>(n) * DTypeSize(t), '\0');
  uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);  // xorshift64: fast enough for 64 MiB
  for (size_t i = 0; i < s.size(); ++i) {
    if (i % 8 == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    s[i] = static_cast<char>(x >> (8 * (i % 8)));
  }
  if (t == DType::kBool) {
    for (char& c : s) c = static_cast<char>(c & 1);
  }
  return s;
}

Result<EventView> Decode(const std::string& payload) { return DecodeEvent(payload, "test"); }

struct Decoded {
  EventView ev;
  Tensor tensor;
  ModeInfo mode;
};

Decoded DecodeTensorEvent(const std::string& payload) {
  Decoded d;
  auto ev = Decode(payload);
  EXPECT_TRUE(ev.ok()) << ev.status().ToString();
  if (!ev.ok()) return d;
  d.ev = *ev;
  EXPECT_TRUE(d.ev.has_summary);
  EXPECT_EQ(d.ev.values.size(), 1u);
  if (d.ev.values.size() != 1) return d;
  const SummaryValueView& v = d.ev.values[0];
  EXPECT_EQ(v.kind, SummaryValueView::Kind::kTensor);
  auto t = TensorFromProto(v.tensor, nullptr, "test");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (t.ok()) d.tensor = *t;
  auto m = ModeFromPluginData(v.plugin_data, d.ev.step, "test");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (m.ok()) d.mode = *m;
  return d;
}

TEST(EventCodecTest, EveryNumericDTypeRoundTrips) {
  for (DType t : kNumericDTypes) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{}, {0}, {3, 0}, {1}, {5}, {2, 3, 4}}) {
      const std::string bytes = SampleBytes(t, NumElements(shape));
      TensorEventSpec spec{1.5e9, 17, Mode::kEval, 3, "Net_fc1.weight", t, shape};
      const std::string payload = EncodeTensorEvent(spec, bytes);
      Decoded d = DecodeTensorEvent(payload);
      SCOPED_TRACE(std::string(DTypeName(t)) + " " + ShapeToString(shape));
      EXPECT_EQ(d.ev.wall_time, 1.5e9);
      EXPECT_EQ(d.ev.step, 17);
      EXPECT_EQ(d.ev.values[0].tag, "Net_fc1.weight");
      EXPECT_EQ(d.mode.mode, Mode::kEval);
      EXPECT_EQ(d.mode.mode_step, 3);
      EXPECT_EQ(d.ev.values[0].tensor.dtype, ToTfDataType(t));
      EXPECT_EQ(d.tensor.dtype, t);
      EXPECT_EQ(d.tensor.shape, shape);
      ASSERT_EQ(d.tensor.nbytes(), bytes.size());
      if (!bytes.empty()) {
        EXPECT_EQ(std::memcmp(d.tensor.data, bytes.data(), bytes.size()), 0);
        // Zero copy: the tensor points into the payload.
        EXPECT_GE(static_cast<const char*>(d.tensor.data), payload.data());
        EXPECT_LE(static_cast<const char*>(d.tensor.data) + bytes.size(),
                  payload.data() + payload.size());
      }
      // tensor_content is the last thing in the payload.
      EXPECT_EQ(payload.substr(payload.size() - bytes.size()), bytes);
    }
  }
}

TEST(EventCodecTest, PrefixPlusContentEqualsWholeEncoding) {
  const std::vector<int64_t> shape{4, 4};
  const std::string bytes = SampleBytes(DType::kF32, 16);
  TensorEventSpec spec{2.0, 5, Mode::kTrain, 5, "x", DType::kF32, shape};
  std::string prefix;
  const size_t n = AppendTensorEventPrefix(spec, bytes.size(), 0, &prefix);
  EXPECT_EQ(n, prefix.size());
  EXPECT_EQ(prefix + bytes, EncodeTensorEvent(spec, bytes));
}

TEST(EventCodecTest, ContentIsAlignedForAnyPayloadOffset) {
  // Tags of many lengths push the nested length varints across size boundaries.
  for (size_t tag_len : {0, 1, 50, 100, 127, 128, 200, 16383, 16384}) {
    const std::string tag(tag_len, 't');
    for (uint64_t content :
         {uint64_t{4}, uint64_t{100}, uint64_t{4096}, uint64_t{16384}, uint64_t{2097152}}) {
      for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kU8}) {
        for (uint64_t off = 0; off < 70; off += 7) {
          const std::vector<int64_t> shape{static_cast<int64_t>(content / DTypeSize(t))};
          TensorEventSpec spec{0, 1, Mode::kGlobal, 1, tag, t, shape};
          std::string prefix;
          AppendTensorEventPrefix(spec, content, off, &prefix);
          const uint64_t align = content >= kLargeContentThreshold
                                     ? kLargeContentAlignment
                                     : std::min<uint64_t>(DTypeSize(t), 8);
          EXPECT_EQ((off + prefix.size()) % align, 0u)
              << "tag " << tag_len << " content " << content << " off " << off;
          if (content > 16384 || off % 2 != 0) continue;
          // And it still decodes.
          std::string payload = prefix + std::string(content, 'c');
          auto ev = Decode(payload);
          ASSERT_TRUE(ev.ok()) << ev.status().ToString();
          EXPECT_EQ(ev->values[0].tensor.tensor_content.size(), content);
          EXPECT_EQ(ev->values[0].tag, tag);
        }
      }
    }
  }
}

TEST(EventCodecTest, StringsRoundTrip) {
  const std::vector<std::string_view> strings{"", "abc", "h\xc3\xa9llo",
                                              std::string_view("a\0b", 3)};
  const std::vector<int64_t> shape{4};
  TensorEventSpec spec{3.0, 9, Mode::kPredict, 1, "names", DType::kString, shape};
  std::string payload;
  AppendStringTensorEvent(spec, strings, &payload);
  Decoded d = DecodeTensorEvent(payload);
  EXPECT_EQ(d.ev.values[0].tensor.dtype, 0);  // DT_INVALID, as smdebug writes strings
  EXPECT_EQ(d.tensor.dtype, DType::kString);
  EXPECT_EQ(d.tensor.shape, shape);
  ASSERT_EQ(d.tensor.strings.size(), 4u);
  for (size_t i = 0; i < strings.size(); ++i) EXPECT_EQ(d.tensor.strings[i], strings[i]);
  EXPECT_EQ(d.mode.mode, Mode::kPredict);
}

TEST(EventCodecTest, LargeTensorRoundTrips) {
  const int64_t n = (int64_t{64} << 20) / 4;
  const std::string bytes = SampleBytes(DType::kF32, n, 7);
  const std::vector<int64_t> shape{n / 1024, 1024};
  TensorEventSpec spec{1.0, 1, Mode::kTrain, 1, "big", DType::kF32, shape};
  const std::string payload = EncodeTensorEvent(spec, bytes);
  Decoded d = DecodeTensorEvent(payload);
  ASSERT_EQ(d.tensor.nbytes(), bytes.size());
  EXPECT_EQ(std::memcmp(d.tensor.data, bytes.data(), bytes.size()), 0);
  EXPECT_EQ(d.tensor.shape, shape);
}

TEST(EventCodecTest, NegativeStepsAndModeSteps) {
  TensorEventSpec spec{0, -1, Mode::kTrain, -5, "neg", DType::kI32, {}};
  const std::string bytes = SampleBytes(DType::kI32, 1);
  Decoded d = DecodeTensorEvent(EncodeTensorEvent(spec, bytes));
  EXPECT_EQ(d.ev.step, -1);
  EXPECT_EQ(d.mode.mode_step, -5);
}

TEST(EventCodecTest, MissingPluginDataMeansGlobal) {
  auto m = ModeFromPluginData({}, 42, "t");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->mode, Mode::kGlobal);
  EXPECT_EQ(m->mode_step, 42);
  const PluginDataView bad_mode[] = {{"mode", "7"}};
  EXPECT_EQ(ModeFromPluginData(bad_mode, 1, "t").status().code(), StatusCode::kCorruption);
  const PluginDataView bad_step[] = {{"mode_step", "x1"}};
  EXPECT_EQ(ModeFromPluginData(bad_step, 1, "t").status().code(), StatusCode::kCorruption);
  const PluginDataView other[] = {{"something", "else"}, {"mode", "2"}};
  auto o = ModeFromPluginData(other, 8, "t");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->mode, Mode::kEval);
  EXPECT_EQ(o->mode_step, 8);
}

TEST(EventCodecTest, ScalarAndHistogramAndFileVersion) {
  const std::string fv_payload = EncodeFileVersionEvent(12.5, "brain.Event:2");
  auto fv = Decode(fv_payload);
  ASSERT_TRUE(fv.ok());
  EXPECT_EQ(fv->wall_time, 12.5);
  ASSERT_TRUE(fv->file_version.has_value());
  EXPECT_EQ(*fv->file_version, "brain.Event:2");
  EXPECT_FALSE(fv->has_summary);

  const std::string sc_payload = EncodeScalarEvent(1.0, 3, "loss", 0.25f);
  auto sc = Decode(sc_payload);
  ASSERT_TRUE(sc.ok());
  ASSERT_EQ(sc->values.size(), 1u);
  EXPECT_EQ(sc->values[0].kind, SummaryValueView::Kind::kSimpleValue);
  EXPECT_EQ(sc->values[0].simple_value, 0.25f);
  EXPECT_EQ(sc->step, 3);

  HistogramData h{-1, 2, 10, 3.5, 9.25, {0, 1, 2}, {4, 5, 1}};
  const std::string hi_payload = EncodeHistogramEvent(1.0, 4, "w", h);
  auto hi = Decode(hi_payload);
  ASSERT_TRUE(hi.ok());
  const HistogramData& g = hi->values[0].histo;
  EXPECT_EQ(hi->values[0].kind, SummaryValueView::Kind::kHisto);
  EXPECT_EQ(g.min, -1);
  EXPECT_EQ(g.max, 2);
  EXPECT_EQ(g.num, 10);
  EXPECT_EQ(g.sum, 3.5);
  EXPECT_EQ(g.sum_squares, 9.25);
  EXPECT_EQ(g.bucket_limit, h.bucket_limit);
  EXPECT_EQ(g.bucket, h.bucket);
}

// ----- hand-built TensorProtos for the fallback fields

std::string EventWithTensor(const std::string& tensor_msg) {
  using namespace wire;
  std::string value;
  PutLenHeader(1, 1, &value);
  value += "t";
  PutLenHeader(8, tensor_msg.size(), &value);
  value += tensor_msg;
  std::string summary;
  PutLenHeader(1, value.size(), &summary);
  summary += value;
  std::string ev;
  PutVarintField(2, 6, &ev);
  PutLenHeader(5, summary.size(), &ev);
  ev += summary;
  return ev;
}

std::string ShapeMsg(std::vector<int64_t> dims) {
  using namespace wire;
  std::string shape;
  for (int64_t d : dims) {
    std::string dim;
    PutVarintField(1, static_cast<uint64_t>(d), &dim);
    PutLenHeader(2, dim.size(), &shape);
    shape += dim;
  }
  std::string out;
  PutLenHeader(2, shape.size(), &out);
  return out + shape;
}

// Fallback values are copied, so the tensor outlives the payload.
Result<Tensor> FallbackTensor(const std::string& tensor_msg) {
  const std::string payload = EventWithTensor(tensor_msg);
  auto ev = DecodeEvent(payload, "fallback");
  if (!ev.ok()) return ev.status();
  auto t = TensorFromProto(ev->values[0].tensor, nullptr, "fallback");
  return t;
}

TEST(EventCodecTest, FallbackFloatValPackedAndUnpacked) {
  using namespace wire;
  std::string packed;
  PutVarintField(1, tf_dtype::kFloat, &packed);
  packed += ShapeMsg({3});
  PutLenHeader(5, 12, &packed);
  for (float f : {1.5f, -2.0f, 3.25f}) PutFixed32(FloatBits(f), &packed);
  std::string unpacked;
  PutVarintField(1, tf_dtype::kFloat, &unpacked);
  unpacked += ShapeMsg({3});
  for (float f : {1.5f, -2.0f, 3.25f}) PutFloatField(5, f, &unpacked);
  for (const std::string& msg : {packed, unpacked}) {
    auto t = FallbackTensor(msg);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_EQ(t->num_elements(), 3);
    const float* f = static_cast<const float*>(t->data);
    EXPECT_EQ(f[0], 1.5f);
    EXPECT_EQ(f[1], -2.0f);
    EXPECT_EQ(f[2], 3.25f);
  }
}

TEST(EventCodecTest, FallbackRepeatsLastValueAndNegativeInts) {
  using namespace wire;
  std::string msg;
  PutVarintField(1, tf_dtype::kInt32, &msg);
  msg += ShapeMsg({2, 2});
  PutVarintField(7, static_cast<uint64_t>(int64_t{-7}), &msg);  // sign-extended, 10 bytes
  PutVarintField(7, 9, &msg);
  auto t = FallbackTensor(msg);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const int32_t* v = static_cast<const int32_t*>(t->data);
  EXPECT_EQ(v[0], -7);
  EXPECT_EQ(v[1], 9);
  EXPECT_EQ(v[2], 9);
  EXPECT_EQ(v[3], 9);

  std::string too_many;
  PutVarintField(1, tf_dtype::kInt64, &too_many);
  too_many += ShapeMsg({1});
  PutVarintField(10, 1, &too_many);
  PutVarintField(10, 2, &too_many);
  EXPECT_EQ(FallbackTensor(too_many).status().code(), StatusCode::kCorruption);

  std::string zeros;
  PutVarintField(1, tf_dtype::kDouble, &zeros);
  zeros += ShapeMsg({2});
  auto z = FallbackTensor(zeros);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(static_cast<const double*>(z->data)[1], 0.0);

  std::string bools;
  PutVarintField(1, tf_dtype::kBool, &bools);
  bools += ShapeMsg({2});
  PutVarintField(11, 0, &bools);
  PutVarintField(11, 5, &bools);  // any non-zero is true
  auto b = FallbackTensor(bools);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(static_cast<const uint8_t*>(b->data)[0], 0);
  EXPECT_EQ(static_cast<const uint8_t*>(b->data)[1], 1);
}

TEST(EventCodecTest, ContentSizeMismatchAndUnknownDtype) {
  using namespace wire;
  std::string msg;
  PutVarintField(1, tf_dtype::kFloat, &msg);
  msg += ShapeMsg({3});
  PutLenHeader(4, 8, &msg);
  msg += std::string(8, 'x');
  EXPECT_EQ(FallbackTensor(msg).status().code(), StatusCode::kCorruption);

  std::string quant;
  PutVarintField(1, 11 /* DT_QINT8 */, &quant);
  EXPECT_EQ(FallbackTensor(quant).status().code(), StatusCode::kNotSupported);

  std::string neg;
  PutVarintField(1, tf_dtype::kFloat, &neg);
  neg += ShapeMsg({-1});
  EXPECT_EQ(FallbackTensor(neg).status().code(), StatusCode::kCorruption);

  std::string huge;
  PutVarintField(1, tf_dtype::kFloat, &huge);
  huge += ShapeMsg({int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_EQ(FallbackTensor(huge).status().code(), StatusCode::kCorruption);
}

// ----- malformed input

TEST(EventCodecTest, UnknownFieldsAreSkipped) {
  TensorEventSpec spec{1.0, 2, Mode::kTrain, 2, "u", DType::kI32, {}};
  std::string payload = EncodeTensorEvent(spec, SampleBytes(DType::kI32, 1));
  wire::PutVarintField(99, 12345, &payload);
  wire::PutLenHeader(98, 3, &payload);
  payload += "abc";
  wire::PutFloatField(97, 1.0f, &payload);
  Decoded d = DecodeTensorEvent(payload);
  EXPECT_EQ(d.ev.step, 2);
  EXPECT_EQ(d.tensor.num_elements(), 1);
}

TEST(EventCodecTest, MalformedInputIsCorruption) {
  const std::string overflow(11, '\xff');
  auto a = Decode(overflow);
  ASSERT_EQ(a.status().code(), StatusCode::kCorruption);
  EXPECT_NE(a.status().message().find("varint"), std::string::npos);

  std::string wrong_type;  // step (varint) sent as length-delimited
  wire::PutLenHeader(2, 1, &wrong_type);
  wrong_type += "x";
  auto b = Decode(wrong_type);
  ASSERT_EQ(b.status().code(), StatusCode::kCorruption);
  EXPECT_NE(b.status().message().find("wire type"), std::string::npos);

  std::string past_end;
  wire::PutLenHeader(5, 100, &past_end);
  past_end += "short";
  auto c = Decode(past_end);
  ASSERT_EQ(c.status().code(), StatusCode::kCorruption);
  EXPECT_NE(c.status().message().find("runs past the end"), std::string::npos);

  std::string group;
  wire::PutVarint(wire::Tag(50, wire::kStartGroup), &group);
  EXPECT_EQ(Decode(group).status().code(), StatusCode::kCorruption);

  EXPECT_EQ(Decode(std::string(1, '\0')).status().code(), StatusCode::kCorruption);  // field 0
}

TEST(EventCodecTest, TruncationInsideTheSummaryIsCorruption) {
  const std::vector<int64_t> shape{8};  // the spec's span borrows it
  TensorEventSpec spec{1.0, 300, Mode::kTrain, 2, "trunc", DType::kF32, shape};
  const std::string payload = EncodeTensorEvent(spec, SampleBytes(DType::kF32, 8));
  // wall_time (9 bytes) + step (1 + 2 bytes) come first; the summary field starts at byte 12.
  for (size_t len = 0; len < payload.size(); ++len) {
    const std::string cut = payload.substr(0, len);
    auto r = Decode(cut);
    if (len == 0 || len == 9 || len == 12) {
      EXPECT_TRUE(r.ok()) << len;  // ends at a top-level field boundary
    } else {
      EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << len;
    }
  }
}

TEST(EventCodecTest, RandomMutationsNeverCrash) {
  const std::vector<int64_t> shape{2, 3};
  TensorEventSpec spec{1.0, 7, Mode::kEval, 1, "mut", DType::kF64, shape};
  const std::string payload = EncodeTensorEvent(spec, SampleBytes(DType::kF64, 6));
  std::mt19937 rng(1234);
  int failures = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string m = payload;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) m[rng() % m.size()] = static_cast<char>(rng());
    m.resize(rng() % (m.size() + 1));
    auto ev = Decode(m);
    if (!ev.ok()) {
      EXPECT_EQ(ev.status().code(), StatusCode::kCorruption);
      ++failures;
      continue;
    }
    for (const auto& v : ev->values) {
      auto t = TensorFromProto(v.tensor, nullptr, "mut");
      if (t.ok() && t->dtype != DType::kString && t->nbytes() > 0) {
        // Whatever it decoded must lie inside the input.
        volatile char sink = static_cast<const char*>(t->data)[t->nbytes() - 1];
        (void)sink;
      }
    }
  }
  EXPECT_GT(failures, 0);
}

}  // namespace
}  // namespace trainscope::event_codec
