// Decoding half of event_codec.h.
#include <charconv>
#include <cstring>

#include "store/event_codec.h"
#include "store/wire_format.h"
#include "trainscope/trial_format.h"

namespace trainscope::event_codec {

using wire::WireReader;
using wire::WireType;

namespace {

// Repeated scalar fields arrive packed (one LEN field) or one element per field.
template <typename T, typename ReadOne>
Status ReadRepeated(WireReader& r, const char* at, std::string_view msg, int field, WireType wt,
                    WireType element_wt, std::vector<T>* out, ReadOne read_one) {
  if (wt == element_wt) return read_one(r, out);
  if (wt != wire::kLen) return r.WrongType(at, msg, field, wt);
  std::string_view bytes;
  TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
  WireReader sub = r.Sub(bytes);
  if (element_wt == wire::kFixed32 && bytes.size() % 4 != 0) {
    return r.Error(at, std::string(msg) + " packed field " + std::to_string(field) +
                           " is not a multiple of 4 bytes");
  }
  if (element_wt == wire::kFixed64 && bytes.size() % 8 != 0) {
    return r.Error(at, std::string(msg) + " packed field " + std::to_string(field) +
                           " is not a multiple of 8 bytes");
  }
  while (!sub.done()) TS_RETURN_IF_ERROR(read_one(sub, out));
  return Status::OK();
}

template <typename T>
Status ReadVarints(WireReader& r, const char* at, std::string_view msg, int field, WireType wt,
                   std::vector<T>* out) {
  return ReadRepeated(r, at, msg, field, wt, wire::kVarint, out,
                      [](WireReader& rr, std::vector<T>* o) {
                        uint64_t v = 0;
                        TS_RETURN_IF_ERROR(rr.ReadVarint(&v));
                        o->push_back(static_cast<T>(v));
                        return Status::OK();
                      });
}

Status ReadFloats(WireReader& r, const char* at, std::string_view msg, int field, WireType wt,
                  std::vector<float>* out) {
  return ReadRepeated(r, at, msg, field, wt, wire::kFixed32, out,
                      [](WireReader& rr, std::vector<float>* o) {
                        float v = 0;
                        TS_RETURN_IF_ERROR(rr.ReadFloat(&v));
                        o->push_back(v);
                        return Status::OK();
                      });
}

Status ReadDoubles(WireReader& r, const char* at, std::string_view msg, int field, WireType wt,
                   std::vector<double>* out) {
  return ReadRepeated(r, at, msg, field, wt, wire::kFixed64, out,
                      [](WireReader& rr, std::vector<double>* o) {
                        double v = 0;
                        TS_RETURN_IF_ERROR(rr.ReadDouble(&v));
                        o->push_back(v);
                        return Status::OK();
                      });
}

#define TS_EXPECT_WT_(want)                                    \
  do {                                                         \
    if (wt != (want)) return r.WrongType(at, kMsg, field, wt); \
  } while (0)

Status DecodeShape(WireReader r, std::vector<int64_t>* shape) {
  static constexpr std::string_view kMsg = "TensorShapeProto";
  while (!r.done()) {
    const char* at = r.pos();
    int field = 0;
    WireType wt{};
    TS_RETURN_IF_ERROR(r.ReadTag(&field, &wt));
    if (field == 2) {  // dim
      TS_EXPECT_WT_(wire::kLen);
      std::string_view bytes;
      TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
      WireReader d = r.Sub(bytes);
      int64_t size = 0;
      while (!d.done()) {
        const char* dat = d.pos();
        int dfield = 0;
        WireType dwt{};
        TS_RETURN_IF_ERROR(d.ReadTag(&dfield, &dwt));
        if (dfield == 1) {
          if (dwt != wire::kVarint) return d.WrongType(dat, "TensorShapeProto.Dim", dfield, dwt);
          uint64_t v = 0;
          TS_RETURN_IF_ERROR(d.ReadVarint(&v));
          size = static_cast<int64_t>(v);
        } else {
          TS_RETURN_IF_ERROR(d.Skip(dfield, dwt));  // name and anything unknown
        }
      }
      shape->push_back(size);
    } else {
      TS_RETURN_IF_ERROR(r.Skip(field, wt));
    }
  }
  return Status::OK();
}

Status DecodeTensor(WireReader r, TensorProtoView* t) {
  static constexpr std::string_view kMsg = "TensorProto";
  while (!r.done()) {
    const char* at = r.pos();
    int field = 0;
    WireType wt{};
    TS_RETURN_IF_ERROR(r.ReadTag(&field, &wt));
    std::string_view bytes;
    uint64_t u = 0;
    switch (field) {
      case 1:
        TS_EXPECT_WT_(wire::kVarint);
        TS_RETURN_IF_ERROR(r.ReadVarint(&u));
        t->dtype = static_cast<int32_t>(u);
        break;
      case 2:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
        // A message field seen twice merges, as in protobuf: dims append.
        TS_RETURN_IF_ERROR(DecodeShape(r.Sub(bytes), &t->shape));
        break;
      case 4:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&t->tensor_content));
        t->has_content = true;
        break;
      case 5:
        TS_RETURN_IF_ERROR(ReadFloats(r, at, kMsg, field, wt, &t->float_val));
        break;
      case 6:
        TS_RETURN_IF_ERROR(ReadDoubles(r, at, kMsg, field, wt, &t->double_val));
        break;
      case 7:
        TS_RETURN_IF_ERROR(ReadVarints(r, at, kMsg, field, wt, &t->int_val));
        break;
      case 8:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
        t->string_val.push_back(bytes);
        break;
      case 9:
        TS_RETURN_IF_ERROR(ReadFloats(r, at, kMsg, field, wt, &t->scomplex_val));
        break;
      case 10:
        TS_RETURN_IF_ERROR(ReadVarints(r, at, kMsg, field, wt, &t->int64_val));
        break;
      case 11:
        TS_RETURN_IF_ERROR(ReadVarints(r, at, kMsg, field, wt, &t->bool_val));
        break;
      case 12:
        TS_RETURN_IF_ERROR(ReadDoubles(r, at, kMsg, field, wt, &t->dcomplex_val));
        break;
      case 13:
        TS_RETURN_IF_ERROR(ReadVarints(r, at, kMsg, field, wt, &t->half_val));
        break;
      case 16:
        TS_RETURN_IF_ERROR(ReadVarints(r, at, kMsg, field, wt, &t->uint32_val));
        break;
      case 17:
        TS_RETURN_IF_ERROR(ReadVarints(r, at, kMsg, field, wt, &t->uint64_val));
        break;
      default:
        TS_RETURN_IF_ERROR(r.Skip(field, wt));
    }
  }
  return Status::OK();
}

Status DecodeHisto(WireReader r, HistogramData* h) {
  static constexpr std::string_view kMsg = "HistogramProto";
  while (!r.done()) {
    const char* at = r.pos();
    int field = 0;
    WireType wt{};
    TS_RETURN_IF_ERROR(r.ReadTag(&field, &wt));
    double* scalar = nullptr;
    switch (field) {
      case 1:
        scalar = &h->min;
        break;
      case 2:
        scalar = &h->max;
        break;
      case 3:
        scalar = &h->num;
        break;
      case 4:
        scalar = &h->sum;
        break;
      case 5:
        scalar = &h->sum_squares;
        break;
      case 6:
        TS_RETURN_IF_ERROR(ReadDoubles(r, at, kMsg, field, wt, &h->bucket_limit));
        break;
      case 7:
        TS_RETURN_IF_ERROR(ReadDoubles(r, at, kMsg, field, wt, &h->bucket));
        break;
      default:
        TS_RETURN_IF_ERROR(r.Skip(field, wt));
    }
    if (scalar != nullptr) {
      TS_EXPECT_WT_(wire::kFixed64);
      TS_RETURN_IF_ERROR(r.ReadDouble(scalar));
    }
  }
  return Status::OK();
}

Status DecodeMetadata(WireReader r, std::vector<PluginDataView>* out) {
  static constexpr std::string_view kMsg = "SummaryMetadata";
  while (!r.done()) {
    const char* at = r.pos();
    int field = 0;
    WireType wt{};
    TS_RETURN_IF_ERROR(r.ReadTag(&field, &wt));
    if (field != 1) {
      TS_RETURN_IF_ERROR(r.Skip(field, wt));
      continue;
    }
    TS_EXPECT_WT_(wire::kLen);
    std::string_view bytes;
    TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
    WireReader p = r.Sub(bytes);
    PluginDataView pd;
    while (!p.done()) {
      const char* pat = p.pos();
      int pfield = 0;
      WireType pwt{};
      TS_RETURN_IF_ERROR(p.ReadTag(&pfield, &pwt));
      if (pfield == 1 || pfield == 2) {
        if (pwt != wire::kLen) return p.WrongType(pat, "PluginData", pfield, pwt);
        TS_RETURN_IF_ERROR(p.ReadLen(pfield == 1 ? &pd.plugin_name : &pd.content));
      } else {
        TS_RETURN_IF_ERROR(p.Skip(pfield, pwt));
      }
    }
    out->push_back(pd);
  }
  return Status::OK();
}

Status DecodeValue(WireReader r, SummaryValueView* v) {
  static constexpr std::string_view kMsg = "Summary.Value";
  while (!r.done()) {
    const char* at = r.pos();
    int field = 0;
    WireType wt{};
    TS_RETURN_IF_ERROR(r.ReadTag(&field, &wt));
    std::string_view bytes;
    switch (field) {
      case 1:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&v->tag));
        break;
      case 2:
        TS_EXPECT_WT_(wire::kFixed32);
        TS_RETURN_IF_ERROR(r.ReadFloat(&v->simple_value));
        v->kind = SummaryValueView::Kind::kSimpleValue;
        break;
      case 5:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
        if (v->kind != SummaryValueView::Kind::kHisto) v->histo = HistogramData{};
        TS_RETURN_IF_ERROR(DecodeHisto(r.Sub(bytes), &v->histo));
        v->kind = SummaryValueView::Kind::kHisto;
        break;
      case 8:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
        if (v->kind != SummaryValueView::Kind::kTensor) v->tensor = TensorProtoView{};
        TS_RETURN_IF_ERROR(DecodeTensor(r.Sub(bytes), &v->tensor));
        v->kind = SummaryValueView::Kind::kTensor;
        break;
      case 9:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
        TS_RETURN_IF_ERROR(DecodeMetadata(r.Sub(bytes), &v->plugin_data));
        break;
      default:
        TS_RETURN_IF_ERROR(r.Skip(field, wt));
    }
  }
  return Status::OK();
}

Status DecodeSummary(WireReader r, std::vector<SummaryValueView>* values) {
  static constexpr std::string_view kMsg = "Summary";
  while (!r.done()) {
    const char* at = r.pos();
    int field = 0;
    WireType wt{};
    TS_RETURN_IF_ERROR(r.ReadTag(&field, &wt));
    if (field != 1) {
      TS_RETURN_IF_ERROR(r.Skip(field, wt));
      continue;
    }
    TS_EXPECT_WT_(wire::kLen);
    std::string_view bytes;
    TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
    values->emplace_back();
    TS_RETURN_IF_ERROR(DecodeValue(r.Sub(bytes), &values->back()));
  }
  return Status::OK();
}

}  // namespace

Result<EventView> DecodeEvent(std::string_view payload, std::string_view context) {
  static constexpr std::string_view kMsg = "Event";
  EventView ev;
  WireReader r(payload.data(), payload.data(), payload.data() + payload.size(), context);
  while (!r.done()) {
    const char* at = r.pos();
    int field = 0;
    WireType wt{};
    TS_RETURN_IF_ERROR(r.ReadTag(&field, &wt));
    std::string_view bytes;
    uint64_t u = 0;
    switch (field) {
      case 1:
        TS_EXPECT_WT_(wire::kFixed64);
        TS_RETURN_IF_ERROR(r.ReadDouble(&ev.wall_time));
        break;
      case 2:
        TS_EXPECT_WT_(wire::kVarint);
        TS_RETURN_IF_ERROR(r.ReadVarint(&u));
        ev.step = static_cast<int64_t>(u);
        break;
      case 3:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
        ev.file_version = bytes;
        break;
      case 5:
        TS_EXPECT_WT_(wire::kLen);
        TS_RETURN_IF_ERROR(r.ReadLen(&bytes));
        TS_RETURN_IF_ERROR(DecodeSummary(r.Sub(bytes), &ev.values));
        ev.has_summary = true;
        break;
      default:
        TS_RETURN_IF_ERROR(r.Skip(field, wt));
    }
  }
  return ev;
}

#undef TS_EXPECT_WT_

Result<ModeInfo> ModeFromPluginData(std::span<const PluginDataView> plugin_data, int64_t event_step,
                                    std::string_view context) {
  ModeInfo info{Mode::kGlobal, event_step};
  for (const PluginDataView& pd : plugin_data) {
    const bool is_step = pd.plugin_name == trial_format::kPluginModeStep;
    const bool is_mode = pd.plugin_name == trial_format::kPluginMode;
    if (!is_step && !is_mode) continue;
    int64_t n = 0;
    const char* b = pd.content.data();
    const char* e = b + pd.content.size();
    auto [ptr, ec] = std::from_chars(b, e, n);
    if (ec != std::errc() || ptr != e || (is_mode && (n < 1 || n > 4))) {
      return Status::Corruption(std::string(context) + ": plugin data \"" +
                                std::string(pd.plugin_name) + "\" has content \"" +
                                std::string(pd.content.substr(0, 40)) +
                                "\", which is not a valid " + (is_mode ? "mode (1-4)" : "step"));
    }
    if (is_step) {
      info.mode_step = n;
    } else {
      info.mode = static_cast<Mode>(n);
    }
  }
  return info;
}

}  // namespace trainscope::event_codec
