#include "store/index_fast_parser.h"

#include <cstring>
#include <limits>

namespace trainscope {

namespace {

// A cursor over the text. Every method returns false when the input leaves the fast subset.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool AtEnd() {
    SkipSpace();
    return p_ == end_;
  }
  // Consumes `c` (after whitespace).
  bool Eat(char c) {
    SkipSpace();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool Peek(char c) {
    SkipSpace();
    return p_ < end_ && *p_ == c;
  }
  // A string of printable ASCII without escapes.
  bool String(std::string_view* out) {
    if (!Eat('"')) return false;
    const char* start = p_;
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *out = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    return false;
  }
  // An integer literal (JSON grammar, no fraction or exponent). `negative` tells the sign;
  // magnitudes above 2^64 - 1 leave the subset.
  bool Integer(bool* negative, uint64_t* magnitude) {
    SkipSpace();
    *negative = p_ < end_ && *p_ == '-';
    if (*negative) ++p_;
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    if (*p_ == '0' && p_ + 1 < end_ && p_[1] >= '0' && p_[1] <= '9') return false;  // "01"
    uint64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      const uint64_t d = static_cast<uint64_t>(*p_ - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
      v = v * 10 + d;
      ++p_;
    }
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    *magnitude = v;
    return true;
  }
  // ParseIndexFile's NonNegative: a JSON unsigned integer (no minus sign, not even "-0").
  bool Unsigned(uint64_t* out) {
    bool neg;
    return Integer(&neg, out) && !neg;
  }
  // ParseIndexFile's Int for a number: any int64.
  bool Signed(int64_t* out) {
    bool neg;
    uint64_t m;
    if (!Integer(&neg, &m)) return false;
    if (!neg) {
      if (m > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      *out = static_cast<int64_t>(m);
      return true;
    }
    if (m > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1) return false;
    *out = m == 0 ? 0 : static_cast<int64_t>(0 - m);
    return true;
  }
  // A scalar value of a key the parser ignores: a string, an integer, true, false or null.
  bool SkipScalar() {
    SkipSpace();
    if (p_ == end_) return false;
    if (*p_ == '"') {
      std::string_view s;
      return String(&s);
    }
    for (const char* lit : {"true", "false", "null"}) {
      const size_t n = std::strlen(lit);
      if (static_cast<size_t>(end_ - p_) >= n && std::memcmp(p_, lit, n) == 0) {
        p_ += n;
        return true;
      }
    }
    bool neg;
    uint64_t m;
    return Integer(&neg, &m);
  }

 private:
  const char* p_;
  const char* end_;
};

// ParseIndexFile's CheckRelativePath.
bool RelativeInsideTrial(std::string_view p) {
  if (p.empty() || p[0] == '/') return false;  // NUL cannot occur: strings are printable ASCII
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    if (end - start == 2 && p.compare(start, 2, "..") == 0) return false;
    start = end + 1;
  }
  return true;
}

// Iterates over the members of an object: `member(key)` must consume the value.
template <typename Member>
bool Object(Cursor& c, Member member) {
  if (!c.Eat('{')) return false;
  if (c.Eat('}')) return true;
  do {
    std::string_view key;
    if (!c.String(&key) || !c.Eat(':') || !member(key)) return false;
  } while (c.Eat(','));
  return c.Eat('}');
}

// Iterates over the elements of an array: `element()` must consume one value.
template <typename Element>
bool Array(Cursor& c, Element element) {
  if (!c.Eat('[')) return false;
  if (c.Eat(']')) return true;
  do {
    if (!element()) return false;
  } while (c.Eat(','));
  return c.Eat(']');
}

// Marks `bit` in *seen; false if it was there (a duplicate key leaves the subset).
bool Once(unsigned* seen, unsigned bit) {
  if (*seen & bit) return false;
  *seen |= bit;
  return true;
}

bool TensorEntry(Cursor& c, IndexFileView* out) {
  IndexTensorEntryView e;
  unsigned seen = 0;
  const bool ok = Object(c, [&](std::string_view key) {
    if (key == "tensorname") return Once(&seen, 1) && c.String(&e.tensorname);
    if (key == "start_idx") return Once(&seen, 2) && c.Unsigned(&e.start_idx);
    if (key == "length") return Once(&seen, 4) && c.Unsigned(&e.length);
    if (key == "crc32c") {
      uint64_t crc;
      if (!Once(&seen, 8) || !c.Unsigned(&crc) || crc > std::numeric_limits<uint32_t>::max()) {
        return false;
      }
      e.crc32c = static_cast<uint32_t>(crc);
      return true;
    }
    return c.SkipScalar();
  });
  if (!ok || (seen & 7) != 7) return false;
  if (e.start_idx > (uint64_t{1} << 62) || e.length > (uint64_t{1} << 62)) return false;
  out->tensors.push_back(e);
  return true;
}

bool ShapeEntry(Cursor& c, IndexFileView* out) {
  IndexShapeEntryView e;
  bool has_original = false;
  unsigned seen = 0;
  e.first_dim = static_cast<uint32_t>(out->dims.size());
  const bool ok = Object(c, [&](std::string_view key) {
    if (key == "tensorname") return Once(&seen, 1) && c.String(&e.tensorname);
    if (key == "originalname") {
      // ParseIndexFile takes a non-string originalname as absent; keep to strings here.
      has_original = true;
      return Once(&seen, 2) && c.String(&e.originalname);
    }
    if (key == "shape") {
      return Once(&seen, 4) && Array(c, [&] {
               int64_t d;
               if (!c.Signed(&d)) return false;
               out->dims.push_back(d);
               return true;
             });
    }
    return c.SkipScalar();
  });
  if (!ok || (seen & 5) != 5) return false;
  if (!has_original) e.originalname = e.tensorname;
  e.num_dims = static_cast<uint32_t>(out->dims.size() - e.first_dim);
  out->shapes.push_back(e);
  return true;
}

}  // namespace

bool FastParseIndexFile(std::string_view text, IndexFileView* out) {
  out->Clear();
  Cursor c(text);
  unsigned seen = 0;
  bool meta_empty = true;
  std::string_view mode_name, event_file;
  bool has_mode_step = false, has_event_file = false;
  const bool ok = Object(c, [&](std::string_view key) {
    if (key == "meta") {
      if (!Once(&seen, 1)) return false;
      unsigned mseen = 0;
      return Object(c, [&](std::string_view mkey) {
        meta_empty = false;
        if (mkey == "mode") return Once(&mseen, 1) && c.String(&mode_name);
        if (mkey == "mode_step") {
          has_mode_step = true;
          return Once(&mseen, 2) && c.Signed(&out->mode_step);
        }
        if (mkey == "event_file_name") {
          has_event_file = true;
          return Once(&mseen, 4) && c.String(&event_file);
        }
        // trainscope's closure record (a few LBFGS steps): left to ParseIndexFile.
        if (mkey == "closure_evaluations") return false;
        if (mkey == "model_calls") {  // a non-negative integer; anything else: ParseIndexFile's
          return Once(&mseen, 8) && c.Signed(&out->model_calls) && out->model_calls >= 0 &&
                 out->model_calls <= (int64_t{1} << 62);
        }
        return c.SkipScalar();
      });
    }
    if (key == "tensor_payload") {
      return Once(&seen, 2) && Array(c, [&] { return TensorEntry(c, out); });
    }
    if (key == "shape_payload") {
      return Once(&seen, 4) && Array(c, [&] { return ShapeEntry(c, out); });
    }
    return c.SkipScalar();
  });
  if (!ok || !c.AtEnd()) return false;
  // ParseIndexFile's checks, in its order; any failure is its error to report.
  if (!(seen & 1) || meta_empty || !(seen & 6) || !has_mode_step) return false;
  if (mode_name.data() == nullptr) return false;
  std::optional<Mode> mode = ModeFromName(mode_name);
  if (!mode) return false;
  out->mode = *mode;
  if (!out->tensors.empty()) {
    // An empty name: entries for step bookkeeping only (ParseIndexFile accepts it too).
    if (!has_event_file || (!event_file.empty() && !RelativeInsideTrial(event_file))) return false;
    out->event_file_name = event_file;
  } else if (!(seen & 2)) {
    out->event_file_name = has_event_file ? event_file : std::string_view();
  } else {
    out->event_file_name = std::string_view();  // an empty tensor_payload: not read
  }
  return true;
}

void ViewOf(const IndexFile& file, IndexFileView* out) {
  out->Clear();
  out->mode = file.mode;
  out->mode_step = file.mode_step;
  out->event_file_name = file.event_file_name;
  out->closures = file.closures.empty() ? nullptr : &file.closures;
  out->model_calls = file.model_calls;
  for (const IndexTensorEntry& t : file.tensors) {
    out->tensors.push_back({t.tensorname, t.start_idx, t.length, t.crc32c});
  }
  for (const IndexShapeEntry& s : file.shapes) {
    IndexShapeEntryView v{s.tensorname, s.originalname, static_cast<uint32_t>(out->dims.size()),
                          static_cast<uint32_t>(s.shape.size())};
    out->dims.insert(out->dims.end(), s.shape.begin(), s.shape.end());
    out->shapes.push_back(v);
  }
}

}  // namespace trainscope
