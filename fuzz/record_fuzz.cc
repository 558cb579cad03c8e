// libFuzzer target: TFRecord framing, event decoding and the trial's value reader over
// arbitrary bytes. Whatever the bytes, nothing may crash, hang or read out of bounds; every
// failure must be a Status.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "store/event_codec.h"
#include "store/record_io.h"
#include "store/value_reader.h"
#include "trainscope/env.h"
#include "trainscope/reductions.h"

namespace {

using namespace trainscope;  // NOLINT(build/namespaces): a fuzz driver

// Touches every element of a decoded tensor (ASan catches a view past its buffer).
void Consume(const Tensor& t) {
  if (t.dtype == DType::kString) {
    size_t n = 0;
    for (const std::string& s : t.strings) n += s.size();
    (void)n;
    return;
  }
  if (t.nbytes() > (size_t{1} << 26)) return;
  // Tensor bytes inside a payload may be misaligned (the trial reader copies those into an
  // aligned buffer, as here); reductions read elements as their type.
  const size_t align = std::max<size_t>(1, std::min<size_t>(8, DTypeSize(t.dtype)));
  if (reinterpret_cast<uintptr_t>(t.data) % align != 0) {
    std::vector<uint64_t> copy((t.nbytes() + 7) / 8);
    std::memcpy(copy.data(), t.data, t.nbytes());
    Tensor aligned = t;
    aligned.data = copy.data();
    (void)ComputeStats(aligned.view());
    return;
  }
  (void)ComputeStats(t.view());
}

void DecodePayload(std::string_view payload) {
  auto ev = event_codec::DecodeEvent(payload, "fuzz");
  if (!ev.ok()) return;
  for (const auto& v : ev->values) {
    (void)event_codec::ModeFromPluginData(v.plugin_data, ev->step, "fuzz");
    if (v.kind != event_codec::SummaryValueView::Kind::kTensor) continue;
    auto t = event_codec::TensorFromProto(v.tensor, nullptr, "fuzz");
    if (t.ok()) Consume(*t);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  // 1. Every record of the file, in order.
  record_io::RecordIterator it(bytes, "fuzz.tfevents");
  record_io::RecordRef rec;
  int records = 0;
  while (it.Next(&rec) && records++ < 64) DecodePayload(rec.payload);

  // 2. A record at an arbitrary offset (taken from the first bytes).
  if (size >= 2) {
    const uint64_t offset = (static_cast<uint64_t>(data[0]) << 8 | data[1]) % (size + 16);
    auto r = record_io::ParseRecordAt(bytes, offset, "fuzz.tfevents");
    if (r.ok()) DecodePayload(r->payload);
  }

  // 3. The payload alone, as if framing had been checked already.
  DecodePayload(bytes);

  // 4. The reader path: the bytes as an event file in memory, read through the index entry a
  //    writer would have made for a single record (with and without a CRC).
  static std::unique_ptr<Env> env = NewMemEnv();
  (void)env->WriteFileAtomic("/t/events/e.tfevents", bytes, false);
  ValueReader reader(env.get(), 2, true);
  RecordSpec spec;
  spec.path = "/t/events/e.tfevents";
  spec.display_path = "events/e.tfevents";
  spec.offset = 0;
  spec.length = size;
  spec.expected_tag = "";
  auto t = reader.Read(spec);
  if (t.ok()) Consume(*t);
  spec.crc32c = 0x12345678u;
  (void)reader.Read(spec);
  return 0;
}
