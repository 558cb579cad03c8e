// Protobuf wire-format primitives (private to the store module): varints, fixed-width fields,
// length-delimited fields, and a bounds-checked reader. Little-endian, as protobuf is.
//
// Thread safety: pure functions; a WireReader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "trainscope/status.h"

namespace trainscope::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

constexpr uint64_t Tag(int field, WireType wt) { return (static_cast<uint64_t>(field) << 3) | wt; }

inline size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline void PutVarint(uint64_t v, std::string* out) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

inline void PutFixed32(uint32_t v, std::string* out) {
  char buf[4];
  for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(buf, 4);
}

inline void PutFixed64(uint64_t v, std::string* out) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(buf, 8);
}

inline uint64_t DoubleBits(double d) {
  uint64_t u = 0;
  std::memcpy(&u, &d, 8);
  return u;
}
inline uint32_t FloatBits(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

// Size of a whole length-delimited field (tag, length, `len` bytes).
inline size_t LenFieldSize(int field, uint64_t len) {
  return VarintSize(Tag(field, kLen)) + VarintSize(len) + len;
}
inline void PutLenHeader(int field, uint64_t len, std::string* out) {
  PutVarint(Tag(field, kLen), out);
  PutVarint(len, out);
}
inline void PutVarintField(int field, uint64_t v, std::string* out) {
  PutVarint(Tag(field, kVarint), out);
  PutVarint(v, out);
}
inline void PutDoubleField(int field, double d, std::string* out) {
  PutVarint(Tag(field, kFixed64), out);
  PutFixed64(DoubleBits(d), out);
}
inline void PutFloatField(int field, float f, std::string* out) {
  PutVarint(Tag(field, kFixed32), out);
  PutFixed32(FloatBits(f), out);
}

// Bounds-checked reader over one message's bytes. Errors are Corruption naming `context` and the
// byte offset from `base` (the start of the whole payload).
class WireReader {
 public:
  WireReader(const char* base, const char* begin, const char* end, std::string_view context)
      : base_(base), p_(begin), end_(end), context_(context) {}

  bool done() const { return p_ >= end_; }
  const char* pos() const { return p_; }

  Status ReadVarint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return Error(p_, "varint runs past the end of its message");
      const uint8_t b = static_cast<uint8_t>(*p_++);
      if (shift == 63 && b > 1) return Error(p_ - 1, "varint overflows 64 bits");
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) {
        *v = result;
        return Status::OK();
      }
    }
    return Error(p_ - 1, "varint longer than 10 bytes");
  }

  // Reads a field key. REQUIRES: !done().
  Status ReadTag(int* field, WireType* wt) {
    const char* at = p_;
    uint64_t key = 0;
    TS_RETURN_IF_ERROR(ReadVarint(&key));
    const uint64_t f = key >> 3;
    if (f == 0 || f > 0x1fffffff) return Error(at, "invalid field number " + std::to_string(f));
    *field = static_cast<int>(f);
    *wt = static_cast<WireType>(key & 7);
    return Status::OK();
  }

  Status ReadFixed32(uint32_t* v) {
    if (end_ - p_ < 4) return Error(p_, "fixed32 runs past the end of its message");
    uint32_t r = 0;
    for (int i = 3; i >= 0; --i) r = (r << 8) | static_cast<uint8_t>(p_[i]);
    p_ += 4;
    *v = r;
    return Status::OK();
  }

  Status ReadFixed64(uint64_t* v) {
    if (end_ - p_ < 8) return Error(p_, "fixed64 runs past the end of its message");
    uint64_t r = 0;
    for (int i = 7; i >= 0; --i) r = (r << 8) | static_cast<uint8_t>(p_[i]);
    p_ += 8;
    *v = r;
    return Status::OK();
  }

  Status ReadDouble(double* d) {
    uint64_t u = 0;
    TS_RETURN_IF_ERROR(ReadFixed64(&u));
    std::memcpy(d, &u, 8);
    return Status::OK();
  }

  Status ReadFloat(float* f) {
    uint32_t u = 0;
    TS_RETURN_IF_ERROR(ReadFixed32(&u));
    std::memcpy(f, &u, 4);
    return Status::OK();
  }

  // Reads a length-delimited field's bytes.
  Status ReadLen(std::string_view* out) {
    const char* at = p_;
    uint64_t len = 0;
    TS_RETURN_IF_ERROR(ReadVarint(&len));
    if (len > static_cast<uint64_t>(end_ - p_)) {
      return Error(at, "length " + std::to_string(len) + " runs past the end of its message (" +
                           std::to_string(end_ - p_) + " bytes left)");
    }
    *out = std::string_view(p_, static_cast<size_t>(len));
    p_ += len;
    return Status::OK();
  }

  Status Skip(int field, WireType wt) {
    uint64_t u = 0;
    std::string_view sv;
    switch (wt) {
      case kVarint:
        return ReadVarint(&u);
      case kFixed64:
        return ReadFixed64(&u);
      case kLen:
        return ReadLen(&sv);
      case kFixed32: {
        uint32_t v = 0;
        return ReadFixed32(&v);
      }
      default:
        return Error(p_, "field " + std::to_string(field) + " has unsupported wire type " +
                             std::to_string(static_cast<int>(wt)));
    }
  }

  // A sub-reader over `bytes` (a view inside this reader's buffer).
  WireReader Sub(std::string_view bytes) const {
    return WireReader(base_, bytes.data(), bytes.data() + bytes.size(), context_);
  }

  Status Error(const char* at, const std::string& what) const {
    return Status::Corruption(std::string(context_) + ": malformed protobuf at payload byte " +
                              std::to_string(at - base_) + ": " + what);
  }
  Status WrongType(const char* at, std::string_view msg, int field, WireType wt) const {
    return Error(at, std::string(msg) + " field " + std::to_string(field) + " has wire type " +
                         std::to_string(static_cast<int>(wt)) + ", which that field cannot have");
  }

 private:
  const char* base_;
  const char* p_;
  const char* end_;
  std::string_view context_;
};

}  // namespace trainscope::wire
