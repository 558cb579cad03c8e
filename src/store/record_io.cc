#include "store/record_io.h"

#include <string>

#include "trainscope/crc32c.h"

namespace trainscope::record_io {

using trial_format::kFooterSize;
using trial_format::kFramingOverhead;
using trial_format::kHeaderSize;
using trial_format::kMagicFooter;

void EncodeFixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void EncodeFixed64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void EncodeRecordHeader(uint64_t payload_len, char out[kHeaderSize]) {
  EncodeFixed64(out, payload_len);
  EncodeFixed32(out + 8, crc32c::Mask(crc32c::Value(out, 8)));
}

void AppendRecordHeader(uint64_t payload_len, std::string* out) {
  char buf[kHeaderSize];
  EncodeRecordHeader(payload_len, buf);
  out->append(buf, kHeaderSize);
}

uint32_t PayloadFooter(uint32_t payload_crc) { return crc32c::Mask(payload_crc); }

void AppendFooter(uint32_t footer, std::string* out) {
  char buf[kFooterSize];
  EncodeFixed32(buf, footer);
  out->append(buf, kFooterSize);
}

void AppendRecord(std::string_view payload, bool real_crc, std::string* out) {
  out->reserve(out->size() + payload.size() + kFramingOverhead);
  AppendRecordHeader(payload.size(), out);
  out->append(payload);
  AppendFooter(
      real_crc ? PayloadFooter(crc32c::Value(payload.data(), payload.size())) : kMagicFooter, out);
}

namespace {

Status RecordError(std::string_view file, uint64_t offset, const std::string& what) {
  return Status::Corruption("record at byte offset " + std::to_string(offset) + " of " +
                            std::string(file) + ": " + what +
                            " (the file is truncated or damaged; rewrite it or skip this step)");
}

}  // namespace

Result<RecordRef> ParseRecordAt(std::string_view file, uint64_t offset,
                                std::string_view file_name_for_errors) {
  if (offset > file.size()) {
    return RecordError(
        file_name_for_errors, offset,
        "offset is past the end of the file (" + std::to_string(file.size()) + " bytes)");
  }
  const uint64_t left = file.size() - offset;
  if (left < kHeaderSize) {
    return RecordError(file_name_for_errors, offset,
                       "truncated header: " + std::to_string(left) + " of " +
                           std::to_string(kHeaderSize) + " bytes present");
  }
  const char* p = file.data() + offset;
  const uint64_t len = DecodeFixed64(p);
  const uint32_t len_crc = DecodeFixed32(p + 8);
  if (crc32c::Mask(crc32c::Value(p, 8)) != len_crc) {
    return RecordError(file_name_for_errors, offset, "length checksum mismatch");
  }
  if (len > left - kHeaderSize || left - kHeaderSize - len < kFooterSize) {
    return RecordError(file_name_for_errors, offset,
                       "payload of " + std::to_string(len) +
                           " bytes plus footer does not fit in the " +
                           std::to_string(left - kHeaderSize) + " bytes left");
  }
  RecordRef r;
  r.payload = std::string_view(p + kHeaderSize, static_cast<size_t>(len));
  r.offset = offset;
  r.length = len + kFramingOverhead;
  const uint32_t footer = DecodeFixed32(p + kHeaderSize + len);
  if (footer == kMagicFooter) {
    r.magic_footer = true;
  } else if (footer != PayloadFooter(crc32c::Value(r.payload.data(), r.payload.size()))) {
    return RecordError(file_name_for_errors, offset,
                       "payload checksum mismatch (footer is neither smdebug's constant nor the "
                       "payload's masked CRC32C)");
  }
  return r;
}

bool RecordIterator::Next(RecordRef* out) {
  if (!status_.ok() || offset_ >= file_.size()) return false;
  Result<RecordRef> r = ParseRecordAt(file_, offset_, name_);
  if (!r.ok()) {
    status_ = r.status();
    return false;
  }
  *out = *r;
  offset_ += r->length;
  return true;
}

}  // namespace trainscope::record_io
