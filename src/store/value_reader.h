// ValueReader: reads one tensor record of an event file, given its index entry, without copying
// the tensor bytes: each event file is memory-mapped once (Env::MapFile) and the mapping is kept
// in a small LRU; a Tensor read from it points into the mapping and holds it alive.
//
// Checks, in order: the record lies inside the file; its framing (length CRC, footer: magic or
// real CRC) via record_io::ParseRecordAt; its framed length equals the index entry's; the
// payload CRC32C when the index entry has one (and verification is on); the event decodes; its
// single summary value is a tensor whose tag is the entry's name. Each failure is Corruption
// naming the file and the record's byte offset.
//
// Tensor bytes are used in place when they are aligned for their dtype (trainscope's writer
// aligns them); misaligned bytes (files written by smdebug) are copied into an aligned buffer.
//
// Thread safety: thread-safe (the LRU has its own mutex; decoding runs outside it).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "trainscope/env.h"
#include "trainscope/status.h"
#include "trainscope/tensor.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

struct RecordSpec {
  std::string path;                // absolute path of the event file
  std::string display_path;        // path named in errors (relative to the trial root)
  uint64_t offset = 0;             // of the framed record
  uint64_t length = 0;             // framed record bytes
  std::optional<uint32_t> crc32c;  // payload CRC32C from the index entry
  std::string_view expected_tag;   // the index entry's tensor name
};

// `t` itself when its bytes are aligned for its dtype (trainscope's writer aligns them), else a
// copy in an aligned buffer (files written by smdebug do not align).
Tensor AlignTensor(Tensor t);

class ValueReader {
 public:
  // `max_mapped_files`: mappings kept in the LRU (tensors read keep theirs alive regardless).
  ValueReader(Env* env, size_t max_mapped_files, bool verify_checksums);

  Result<Tensor> Read(const RecordSpec& spec);

  size_t mapped_files() const;

 private:
  Result<std::shared_ptr<const FileRegion>> Map(const std::string& path, bool fresh);

  Env* env_;
  size_t capacity_;
  bool verify_;
  mutable Mutex mu_;
  // Most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<const FileRegion>>> lru_ TS_GUARDED_BY(mu_);
  std::unordered_map<std::string, decltype(lru_)::iterator> map_ TS_GUARDED_BY(mu_);
};

}  // namespace trainscope
