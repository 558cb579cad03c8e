// StepBuffer: one step's event file laid out in memory (private to the store module).
//
// The training thread adds records: each is framed and encoded at once (header, protobuf
// prefix, tensor bytes, footer) into large chunks, so a step of many small tensors becomes a
// few contiguous segments; a borrowed tensor (AddTensorNoCopy) becomes its own segment between
// its prefix and its footer. An I/O thread then appends the segments in order (one Append
// per segment). A copied record's payload CRC32C is computed as its bytes are copied (the copy
// and the CRC cost about one pass over memory); a borrowed record's is computed by an I/O
// thread, in TensorEntries.
//
// Ownership: the buffer owns its chunks and the keepalives of borrowed tensors.
// Thread safety: none; the writer hands a finished buffer from the training thread to one I/O
// thread through its (locked) queue.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/chunk_pool.h"
#include "store/index_file.h"
#include "store/journal.h"
#include "trainscope/modes.h"
#include "trainscope/status.h"
#include "trainscope/tensor.h"

namespace trainscope {

class StepBuffer {
 public:
  // Records smaller than this share chunks of this size.
  static constexpr size_t kChunkSize = size_t{1} << 20;
  static constexpr size_t kMinChunkSize = size_t{64} << 10;

  // `pool` (not owned, may be null) supplies the chunks and gets them back when the buffer dies;
  // it must outlive the buffer.
  StepBuffer(int64_t step, Mode mode, int64_t mode_step, ChunkPool* pool = nullptr);
  // Journal mode (docs/formats/journal.md): records go straight into one memory-mapped slot of
  // `journal` (not owned; must outlive the buffer), contiguous, as the event file will hold
  // them; borrowed tensors are copied. The slot is taken at the first record.
  StepBuffer(int64_t step, Mode mode, int64_t mode_step, Journal* journal, size_t reserve);
  ~StepBuffer();
  StepBuffer(const StepBuffer&) = delete;
  StepBuffer& operator=(const StepBuffer&) = delete;

  int64_t step() const { return step_; }
  Mode mode() const { return mode_; }
  int64_t mode_step() const { return mode_step_; }

  // Adds a tensor record, replacing an earlier one of the same name. REQUIRES: v was validated
  // (see TrialWriter::AddTensor). `borrow` keeps v's bytes in place (v contiguous, not kString)
  // and holds `keepalive` until the buffer dies.
  void AddTensor(std::string_view name, const TensorView& v, double wall_time, bool borrow,
                 std::shared_ptr<const void> keepalive);
  // Adds a shape-only entry, replacing an earlier one of the same name.
  void AddShape(std::string_view name, const std::vector<int64_t>& shape);

  // Drops the bytes of replaced records (re-lays out the step if any name was added twice).
  // Call once, before handing the buffer to the I/O threads.
  void Finish();

  bool empty() const { return records_.empty() && shapes_.empty(); }
  // Journal mode: OK, or why the step could not be stored (a full disk): the step is lost.
  const Status& status() const { return status_; }
  bool journaled() const { return journal_ != nullptr; }
  // Journal mode: the slot (taken now if no record took one; nullptr when that failed, see
  // status()).
  JournalSlot* EnsureSlot();
  std::unique_ptr<JournalSlot>& slot() { return slot_; }
  // Journal mode: set when the step is sealed (the index JSON and the commit entry's number).
  std::string index_json;
  uint64_t seq = 0;
  size_t index_tensors = 0;
  bool has_records() const { return !records_.empty(); }
  // Size of the event file.
  uint64_t file_size() const { return file_size_; }
  // Memory this step pins: chunks plus borrowed bytes.
  uint64_t memory_bytes() const { return memory_bytes_; }

  // The event file's bytes, in order. REQUIRES: Finish() called.
  const std::vector<std::string_view>& segments() const { return segments_; }

  // Index entries (offsets and lengths; crc32c computed here from the bytes). REQUIRES: Finish().
  std::vector<IndexTensorEntry> TensorEntries() const;
  const std::vector<IndexShapeEntry>& shapes() const { return shapes_; }
  // The index's meta.closure_evaluations (TrialWriter::SetClosureSteps).
  void set_closures(std::vector<ClosureStep> c) { closures_ = std::move(c); }
  const std::vector<ClosureStep>& closures() const { return closures_; }
  // The index's meta.model_calls (TrialWriter::SetModelCalls).
  void set_model_calls(int64_t n) { model_calls_ = n; }
  int64_t model_calls() const { return model_calls_; }

 private:
  struct Record {
    std::string name;
    uint64_t offset = 0;         // of the framed record in the file
    uint64_t length = 0;         // framed
    const char* head = nullptr;  // protobuf prefix (after the 12-byte header)
    size_t head_size = 0;
    const char* content = nullptr;  // tensor bytes (in a chunk, or borrowed)
    size_t content_size = 0;
    // To lay the record out again (Finish after a replacement).
    TensorView view;  // data = content; kString views keep their strings in `head`
    bool borrowed = false;
    // CRC32C of the payload (head + content), computed while copying; unset for borrowed
    // records, whose CRC an I/O thread computes (TensorEntries).
    uint32_t crc = 0;
    double wall_time = 0;
    bool live = true;
  };

  // Contiguous room for n bytes at the end of the file.
  char* Reserve(size_t n);
  char* NewChunk(size_t n, size_t* capacity);
  void ReleaseChunks(std::vector<ChunkPool::Chunk>* chunks);
  void AddBorrowedSegment(const char* p, size_t n);
  void AddRecord(std::string_view name, const TensorView& v, double wall_time, bool borrow);
  // Re-lays out a live string record (its payload does not depend on its offset): copies its
  // bytes, from r.head - kHeaderSize, to the end of the buffer.
  void CopyStringRecord(const Record& r);
  void AddStringRecord(std::string_view name, const TensorView& v, double wall_time);

  Journal* journal_ = nullptr;
  size_t reserve_ = 0;
  std::unique_ptr<JournalSlot> slot_;
  Status status_;
  std::vector<char> sink_;  // journal mode, after a failure: where the rest of the step goes
  int64_t step_;
  Mode mode_;
  int64_t mode_step_;
  ChunkPool* pool_;
  std::vector<ChunkPool::Chunk> chunks_;
  char* pack_ = nullptr;  // current shared chunk
  size_t pack_used_ = 0;
  size_t pack_cap_ = 0;
  std::vector<std::string_view> segments_;
  std::vector<Record> records_;
  std::unordered_map<std::string, size_t> record_of_;
  std::vector<IndexShapeEntry> shapes_;
  std::unordered_map<std::string, size_t> shape_of_;
  std::vector<ClosureStep> closures_;
  int64_t model_calls_ = 0;
  std::vector<std::shared_ptr<const void>> keepalives_;
  std::string scratch_;
  uint64_t file_size_ = 0;
  uint64_t memory_bytes_ = 0;
  bool replaced_ = false;
};

}  // namespace trainscope
