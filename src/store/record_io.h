// TFRecord framing (private to the store module): docs/formats/events.md.
//
// A record is [u64 length N][u32 masked crc32c(length bytes)][N payload bytes][u32 footer], all
// little-endian. In events/ the footer is smdebug's constant kMagicFooter; in tensorboard/ it is
// the masked CRC32C of the payload. The parser accepts either.
//
// Thread safety: pure functions; RecordIterator is a value used by one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trainscope/status.h"
#include "trainscope/trial_format.h"

namespace trainscope::record_io {

// Little-endian fixed-width helpers. REQUIRES: p points at 4 (8) readable/writable bytes.
void EncodeFixed32(char* p, uint32_t v);
void EncodeFixed64(char* p, uint64_t v);
uint32_t DecodeFixed32(const char* p);
uint64_t DecodeFixed64(const char* p);

// Writes the 12-byte header of a record whose payload is `payload_len` bytes.
void EncodeRecordHeader(uint64_t payload_len, char out[trial_format::kHeaderSize]);
// Appends the 12-byte header to *out.
void AppendRecordHeader(uint64_t payload_len, std::string* out);

// The footer TensorFlow expects: masked CRC32C of the payload. `payload_crc` is the plain
// (unmasked) CRC32C of the payload, e.g. from crc32c::Value.
uint32_t PayloadFooter(uint32_t payload_crc);
// Appends the 4-byte footer `footer` (kMagicFooter or PayloadFooter(...)).
void AppendFooter(uint32_t footer, std::string* out);
// Appends smdebug's constant footer (events/).
inline void AppendMagicFooter(std::string* out) { AppendFooter(trial_format::kMagicFooter, out); }

// Appends a whole record (header, payload, footer) to *out. `real_crc` chooses the
// TensorBoard footer (masked payload CRC) over the magic constant.
void AppendRecord(std::string_view payload, bool real_crc, std::string* out);

// One parsed record. `payload` points into the parsed buffer.
struct RecordRef {
  std::string_view payload;
  uint64_t offset = 0;        // of the header in the file
  uint64_t length = 0;        // whole framed record: kFramingOverhead + payload.size()
  bool magic_footer = false;  // footer was kMagicFooter (payload not checked by the footer)
};

// Parses the record starting at `offset` of `file` (the whole file's bytes, or any buffer whose
// byte 0 is file offset 0). Verifies the masked length CRC and the footer, which must be either
// kMagicFooter or the masked CRC32C of the payload. Returns Corruption naming
// `file_name_for_errors` and the byte offset when the record is truncated, its length is absurd,
// or a CRC does not match. Never reads outside `file`.
Result<RecordRef> ParseRecordAt(std::string_view file, uint64_t offset,
                                std::string_view file_name_for_errors);

// Iterates over every record of a file, in order.
//   RecordIterator it(bytes, "x.tfevents");
//   RecordRef r;
//   while (it.Next(&r)) { ... }
//   TS_RETURN_IF_ERROR(it.status());
// After an error Next() returns false for good and status() says what went wrong.
class RecordIterator {
 public:
  RecordIterator(std::string_view file, std::string_view file_name_for_errors)
      : file_(file), name_(file_name_for_errors) {}
  bool Next(RecordRef* out);
  const Status& status() const { return status_; }
  uint64_t offset() const { return offset_; }  // of the next record

 private:
  std::string_view file_;
  std::string name_;
  uint64_t offset_ = 0;
  Status status_;
};

}  // namespace trainscope::record_io
