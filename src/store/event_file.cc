#include "trainscope/event_file.h"

#include <memory>

#include "store/event_codec.h"
#include "store/record_io.h"
#include "store/value_reader.h"

namespace trainscope {

Result<std::vector<EventFileTensor>> ReadEventFile(const std::string& path, Env* env) {
  if (env == nullptr) {
    env = Env::Default();
  }
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
        t.value = AlignTensor(std::move(value));
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
