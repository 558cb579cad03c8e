#include "store/index_file.h"

#include <charconv>
#include <nlohmann/json.hpp>

namespace trainscope {

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (u < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[u >> 4]);
          out->push_back(kHex[u & 15]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

std::string EncodeIndexFile(const IndexFile& index) {
  std::string out;
  out.reserve(160 + index.tensors.size() * 96 + index.shapes.size() * 96);
  out.append("{\"meta\": {\"mode\": ");
  AppendJsonString(ModeName(index.mode), &out);
  out.append(", \"mode_step\": ");
  out.append(std::to_string(index.mode_step));
  if (!index.event_file_name.empty()) {
    out.append(", \"event_file_name\": ");
    AppendJsonString(index.event_file_name, &out);
  }
  if (!index.closures.empty()) {
    out.append(", \"closure_evaluations\": [");
    for (size_t c = 0; c < index.closures.size(); ++c) {
      const ClosureStep& step = index.closures[c];
      if (c > 0) out.append(", ");
      out.append("{\"optimizer\": ");
      AppendJsonString(step.optimizer, &out);
      out.append(", \"evaluations\": [");
      for (size_t e = 0; e < step.evaluations.size(); ++e) {
        if (e > 0) out.append(", ");
        out.push_back('[');
        for (size_t k = 0; k < step.evaluations[e].size(); ++k) {
          if (k > 0) out.append(", ");
          AppendJsonString(step.evaluations[e][k], &out);
        }
        out.push_back(']');
      }
      out.append("]}");
    }
    out.push_back(']');
  }
  if (index.model_calls >= 2) {
    out.append(", \"model_calls\": ");
    out.append(std::to_string(index.model_calls));
  }
  out.append("}, \"tensor_payload\": [");
  for (size_t i = 0; i < index.tensors.size(); ++i) {
    const IndexTensorEntry& t = index.tensors[i];
    if (i > 0) out.append(", ");
    out.append("{\"tensorname\": ");
    AppendJsonString(t.tensorname, &out);
    out.append(", \"start_idx\": ");
    out.append(std::to_string(t.start_idx));
    out.append(", \"length\": ");
    out.append(std::to_string(t.length));
    if (t.crc32c) {
      out.append(", \"crc32c\": ");
      out.append(std::to_string(*t.crc32c));
    }
    out.push_back('}');
  }
  out.append("], \"shape_payload\": [");
  for (size_t i = 0; i < index.shapes.size(); ++i) {
    const IndexShapeEntry& s = index.shapes[i];
    if (i > 0) out.append(", ");
    out.append("{\"tensorname\": ");
    AppendJsonString(s.tensorname, &out);
    out.append(", \"originalname\": ");
    AppendJsonString(s.originalname, &out);
    out.append(", \"shape\": [");
    for (size_t k = 0; k < s.shape.size(); ++k) {
      if (k > 0) out.append(", ");
      out.append(std::to_string(s.shape[k]));
    }
    out.append("]}");
  }
  out.append("]}");
  return out;
}

namespace {

using Json = nlohmann::json;

class IndexParser {
 public:
  explicit IndexParser(std::string_view path) : path_(path) {}

  Status Error(const std::string& what) const {
    return Status::Corruption("index file " + std::string(path_) + ": " + what +
                              " (the file is damaged or not an smdebug index; delete it or "
                              "rewrite the step)");
  }

  Result<const Json*> Member(const Json& obj, const char* key, std::string_view where,
                             bool required) const {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) return Error(std::string(where) + " has no \"" + key + "\"");
      return static_cast<const Json*>(nullptr);
    }
    return &*it;
  }

  Result<std::string> String(const Json& obj, const char* key, std::string_view where) const {
    TS_ASSIGN_OR_RETURN(const Json* v, Member(obj, key, where, true));
    if (!v->is_string()) return Error(std::string(where) + " \"" + key + "\" is not a string");
    return v->get_ref<const std::string&>();
  }

  Result<int64_t> Int(const Json& v, std::string_view what) const {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Error(std::string(what) + " is too large");
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_string()) {  // smdebug converts mode_step with int(); accept "12"
      const std::string& s = v.get_ref<const std::string&>();
      int64_t n = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) return n;
    }
    return Error(std::string(what) + " is not an integer");
  }

  Result<uint64_t> NonNegative(const Json& obj, const char* key, std::string_view where) const {
    TS_ASSIGN_OR_RETURN(const Json* v, Member(obj, key, where, true));
    if (v->is_number_unsigned()) return v->get<uint64_t>();
    return Error(std::string(where) + " \"" + key + "\" is not a non-negative integer");
  }

  Status CheckRelativePath(const std::string& p) const {
    if (p.empty() || p[0] == '/' || p.find('\0') != std::string::npos) {
      return Error("meta.event_file_name \"" + p + "\" is not a path relative to the trial");
    }
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find('/', start);
      if (end == std::string::npos) end = p.size();
      if (p.compare(start, end - start, "..") == 0 && end - start == 2) {
        return Error("meta.event_file_name \"" + p + "\" leaves the trial folder");
      }
      start = end + 1;
    }
    return Status::OK();
  }

  Result<IndexFile> Parse(std::string_view text) const {
    Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Error("not valid JSON");
    if (!j.is_object()) return Error("top level is not a JSON object");
    IndexFile out;
    TS_ASSIGN_OR_RETURN(const Json* meta, Member(j, "meta", "the file", true));
    if (!meta->is_object() || meta->empty()) return Error("\"meta\" is not a non-empty object");
    TS_ASSIGN_OR_RETURN(const Json* tensors, Member(j, "tensor_payload", "the file", false));
    TS_ASSIGN_OR_RETURN(const Json* shapes, Member(j, "shape_payload", "the file", false));
    if (tensors == nullptr && shapes == nullptr) {
      return Error("neither \"tensor_payload\" nor \"shape_payload\" is present");
    }
    TS_ASSIGN_OR_RETURN(std::string mode_name, String(*meta, "mode", "meta"));
    std::optional<Mode> mode = ModeFromName(mode_name);
    if (!mode)
      return Error("meta.mode \"" + mode_name + "\" is not TRAIN, EVAL, PREDICT or GLOBAL");
    out.mode = *mode;
    TS_ASSIGN_OR_RETURN(const Json* mode_step, Member(*meta, "mode_step", "meta", true));
    TS_ASSIGN_OR_RETURN(out.mode_step, Int(*mode_step, "meta.mode_step"));

    if (tensors != nullptr && !tensors->is_null()) {
      if (!tensors->is_array()) return Error("\"tensor_payload\" is not a list");
      if (!tensors->empty()) {
        TS_ASSIGN_OR_RETURN(out.event_file_name, String(*meta, "event_file_name", "meta"));
        // An empty name (smdebug's test trials write them) makes the entries step bookkeeping
        // only: the steps count, and reading a value says that no event file was named.
        if (!out.event_file_name.empty())
          TS_RETURN_IF_ERROR(CheckRelativePath(out.event_file_name));
      }
      out.tensors.reserve(tensors->size());
      for (size_t i = 0; i < tensors->size(); ++i) {
        const Json& e = (*tensors)[i];
        const std::string where = "tensor_payload[" + std::to_string(i) + "]";
        if (!e.is_object()) return Error(where + " is not an object");
        IndexTensorEntry t;
        TS_ASSIGN_OR_RETURN(t.tensorname, String(e, "tensorname", where));
        TS_ASSIGN_OR_RETURN(t.start_idx, NonNegative(e, "start_idx", where));
        TS_ASSIGN_OR_RETURN(t.length, NonNegative(e, "length", where));
        if (t.start_idx > (uint64_t{1} << 62) || t.length > (uint64_t{1} << 62)) {
          return Error(where + " has an absurd start_idx or length");
        }
        TS_ASSIGN_OR_RETURN(const Json* crc, Member(e, "crc32c", where, false));
        if (crc != nullptr) {
          if (!crc->is_number_unsigned() || crc->get<uint64_t>() > UINT32_MAX) {
            return Error(where + " \"crc32c\" is not a 32-bit unsigned integer");
          }
          t.crc32c = static_cast<uint32_t>(crc->get<uint64_t>());
        }
        out.tensors.push_back(std::move(t));
      }
    } else if (meta->contains("event_file_name") && (*meta)["event_file_name"].is_string()) {
      out.event_file_name = (*meta)["event_file_name"].get<std::string>();
    }

    TS_ASSIGN_OR_RETURN(const Json* closures, Member(*meta, "closure_evaluations", "meta", false));
    if (closures != nullptr) TS_RETURN_IF_ERROR(ParseClosures(*closures, &out.closures));
    TS_ASSIGN_OR_RETURN(const Json* calls, Member(*meta, "model_calls", "meta", false));
    if (calls != nullptr) {
      if (!calls->is_number_unsigned() || calls->get<uint64_t>() > (uint64_t{1} << 62)) {
        return Error("meta.model_calls is not a non-negative integer");
      }
      out.model_calls = static_cast<int64_t>(calls->get<uint64_t>());
    }

    if (shapes != nullptr && !shapes->is_null()) {
      if (!shapes->is_array()) return Error("\"shape_payload\" is not a list");
      out.shapes.reserve(shapes->size());
      for (size_t i = 0; i < shapes->size(); ++i) {
        const Json& e = (*shapes)[i];
        const std::string where = "shape_payload[" + std::to_string(i) + "]";
        if (!e.is_object()) return Error(where + " is not an object");
        IndexShapeEntry s;
        TS_ASSIGN_OR_RETURN(s.tensorname, String(e, "tensorname", where));
        TS_ASSIGN_OR_RETURN(const Json* orig, Member(e, "originalname", where, false));
        if (orig != nullptr && orig->is_string()) {
          s.originalname = orig->get<std::string>();
        } else {
          s.originalname = s.tensorname;
        }
        TS_ASSIGN_OR_RETURN(const Json* shape, Member(e, "shape", where, true));
        if (!shape->is_array()) return Error(where + " \"shape\" is not a list");
        for (const Json& d : *shape) {
          TS_ASSIGN_OR_RETURN(int64_t dim, Int(d, where + " shape entry"));
          s.shape.push_back(dim);
        }
        out.shapes.push_back(std::move(s));
      }
    }
    return out;
  }

 private:
  // meta.closure_evaluations: [{"optimizer": "LBFGS", "evaluations": [["name", ...], ...]}, ...].
  Status ParseClosures(const Json& v, std::vector<ClosureStep>* out) const {
    static constexpr const char* kWhere = "meta.closure_evaluations";
    if (!v.is_array()) return Error(std::string(kWhere) + " is not a list");
    out->reserve(v.size());
    for (size_t c = 0; c < v.size(); ++c) {
      const std::string where = std::string(kWhere) + "[" + std::to_string(c) + "]";
      if (!v[c].is_object()) return Error(where + " is not an object");
      ClosureStep step;
      TS_ASSIGN_OR_RETURN(step.optimizer, String(v[c], "optimizer", where));
      TS_ASSIGN_OR_RETURN(const Json* evals, Member(v[c], "evaluations", where, true));
      if (!evals->is_array()) return Error(where + " \"evaluations\" is not a list");
      step.evaluations.reserve(evals->size());
      for (const Json& e : *evals) {
        if (!e.is_array()) return Error(where + " has an evaluation that is not a list");
        std::vector<std::string> names;
        names.reserve(e.size());
        for (const Json& n : e) {
          if (!n.is_string()) return Error(where + " has a tensor name that is not a string");
          names.push_back(n.get<std::string>());
        }
        step.evaluations.push_back(std::move(names));
      }
      out->push_back(std::move(step));
    }
    return Status::OK();
  }

  std::string_view path_;
};

}  // namespace

Result<IndexFile> ParseIndexFile(std::string_view json, std::string_view path_for_errors) {
  return IndexParser(path_for_errors).Parse(json);
}

}  // namespace trainscope
