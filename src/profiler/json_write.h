// Small, allocation-free JSON writers for the profiler's hot paths (sampler lines, timeline
// events), where building a DOM per record would cost more than the sample itself. Private.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace trainscope::json_write {

// Appends s as a JSON string literal (quotes included), escaping '"', '\\' and control bytes.
inline void String(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      switch (c) {
        case '\n':
          out->append("\\n");
          break;
        case '\t':
          out->append("\\t");
          break;
        case '\r':
          out->append("\\r");
          break;
        default:
          out->append("\\u00");
          out->push_back(kHex[u >> 4]);
          out->push_back(kHex[u & 15]);
      }
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

// Appends the shortest decimal that round-trips, always with a '.' or an exponent so readers see
// a float (30.0, as Python's json.dumps writes it, not 30); non-finite values become 0.0 (JSON has
// no NaN; callers skip non-finite values before getting here).
inline void Double(std::string* out, double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string_view s(buf, static_cast<size_t>(p - buf));
  out->append(s);
  if (s.find_first_of(".e") == std::string_view::npos) out->append(".0");
}

inline void Int(std::string* out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, p);
}

inline void UInt(std::string* out, uint64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, p);
}

// Epoch microseconds as seconds with six decimals, exactly ("1704110400.000250").
inline void EpochSeconds(std::string* out, uint64_t us) {
  UInt(out, us / 1000000);
  out->push_back('.');
  char frac[7];
  uint64_t f = us % 1000000;
  for (int i = 5; i >= 0; --i) {
    frac[i] = static_cast<char>('0' + f % 10);
    f /= 10;
  }
  out->append(frac, 6);
}

}  // namespace trainscope::json_write
