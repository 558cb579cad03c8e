#include "trainscope/event_file.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "store/event_codec.h"
#include "store/record_io.h"

namespace trainscope {

namespace {

// Tensor bytes in smdebug's files need not be aligned for their dtype: copy those.
Tensor Aligned(Tensor t) {
  if (t.dtype == DType::kString || t.data == nullptr || t.nbytes() == 0) return t;
  const size_t align = std::max<size_t>(1, std::min<size_t>(8, DTypeSize(t.dtype)));
  if (reinterpret_cast<uintptr_t>(t.data) % align == 0) return t;
  const size_t n = t.nbytes();
  std::shared_ptr<uint64_t[]> buf(new uint64_t[(n + 7) / 8]);
  std::memcpy(buf.get(), t.data, n);
  t.data = buf.get();
  t.keepalive = std::move(buf);
  return t;
}

}  // namespace

Result<std::vector<EventFileTensor>> ReadEventFile(const std::string& path, Env* env) {
  if (env == nullptr) env = Env::Default();
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const FileRegion> region, env->MapFile(path));
  std::vector<EventFileTensor> out;
  record_io::RecordIterator it(region->view(), path);
  record_io::RecordRef rec;
  while (it.Next(&rec)) {
    const std::string context = path + ", record at byte " + std::to_string(rec.offset);
    TS_ASSIGN_OR_RETURN(event_codec::EventView ev, event_codec::DecodeEvent(rec.payload, context));
    for (const event_codec::SummaryValueView& v : ev.values) {
      EventFileTensor t;
      if (v.kind == event_codec::SummaryValueView::Kind::kTensor) {
        TS_ASSIGN_OR_RETURN(
            Tensor value,
            event_codec::TensorFromProto(v.tensor, std::shared_ptr<const void>(region), context));
        t.value = Aligned(std::move(value));
      } else if (v.kind == event_codec::SummaryValueView::Kind::kSimpleValue) {
        t.value = Tensor::CopyOf(TensorView::Scalar(DType::kF32, &v.simple_value));
      } else {
        continue;
      }
      TS_ASSIGN_OR_RETURN(event_codec::ModeInfo mode,
                          event_codec::ModeFromPluginData(v.plugin_data, ev.step, context));
      t.name = std::string(v.tag);
      t.step = ev.step;
      t.wall_time = ev.wall_time;
      t.mode = mode.mode;
      t.mode_step = mode.mode_step;
      out.push_back(std::move(t));
    }
  }
  TS_RETURN_IF_ERROR(it.status());
  return out;
}

}  // namespace trainscope
