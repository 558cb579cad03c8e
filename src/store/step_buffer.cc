#include "store/step_buffer.h"

#include <algorithm>
#include <cstring>

#include "store/event_codec.h"
#include "store/record_io.h"
#include "trainscope/crc32c.h"
#include "trainscope/trial_format.h"

namespace trainscope {

using trial_format::kFooterSize;
using trial_format::kHeaderSize;
using trial_format::kMagicFooter;

StepBuffer::StepBuffer(int64_t step, Mode mode, int64_t mode_step, ChunkPool* pool)
    : step_(step), mode_(mode), mode_step_(mode_step), pool_(pool) {}

StepBuffer::StepBuffer(int64_t step, Mode mode, int64_t mode_step, Journal* journal, size_t reserve)
    : journal_(journal),
      reserve_(reserve),
      step_(step),
      mode_(mode),
      mode_step_(mode_step),
      pool_(nullptr) {}

JournalSlot* StepBuffer::EnsureSlot() {
  if (slot_ || !status_.ok()) return slot_.get();
  auto s = journal_->NewSlot(reserve_);
  if (!s.ok()) {
    status_ = s.status();
    return nullptr;
  }
  slot_ = std::move(*s);
  return slot_.get();
}

StepBuffer::~StepBuffer() { ReleaseChunks(&chunks_); }

void StepBuffer::ReleaseChunks(std::vector<ChunkPool::Chunk>* chunks) {
  if (pool_ != nullptr) {
    for (ChunkPool::Chunk& c : *chunks) pool_->Put(std::move(c));
  }
  chunks->clear();
}

char* StepBuffer::NewChunk(size_t n, size_t* capacity) {
  ChunkPool::Chunk c =
      pool_ != nullptr ? pool_->Get(n) : ChunkPool::Chunk{std::unique_ptr<char[]>(new char[n]), n};
  *capacity = c.capacity;
  memory_bytes_ += c.capacity;
  chunks_.push_back(std::move(c));
  return chunks_.back().data.get();
}

char* StepBuffer::Reserve(size_t n) {
  if (journal_ != nullptr) {
    // One contiguous region: the event file as it will be. After a failure the rest of the
    // step goes to a scratch buffer (the step is lost; nothing may crash the training).
    if (status_.ok() && EnsureSlot() != nullptr) {
      Status s = slot_->Ensure(file_size_ + n);
      if (s.ok()) {
        char* p = slot_->data() + file_size_;
        file_size_ += n;
        memory_bytes_ += n;
        return p;
      }
      status_ = s;
    }
    if (sink_.size() < n) sink_.resize(n);
    return sink_.data();
  }
  if (n > kChunkSize / 4) {
    // A dedicated chunk: big records are written straight from it.
    size_t cap = 0;
    char* p = NewChunk(n, &cap);
    segments_.emplace_back(p, n);
    file_size_ += n;
    return p;
  }
  if (pack_ == nullptr || pack_cap_ - pack_used_ < n) {
    // Shared chunks grow from 64 KiB to kChunkSize, so a step of one small tensor stays small.
    const size_t want = std::max(n, std::clamp(2 * pack_cap_, kMinChunkSize, kChunkSize));
    size_t cap = 0;
    pack_ = NewChunk(want, &cap);
    pack_used_ = 0;
    pack_cap_ = cap;
  }
  char* p = pack_ + pack_used_;
  pack_used_ += n;
  file_size_ += n;
  if (!segments_.empty() && segments_.back().data() + segments_.back().size() == p) {
    segments_.back() = std::string_view(segments_.back().data(), segments_.back().size() + n);
  } else {
    segments_.emplace_back(p, n);
  }
  return p;
}

void StepBuffer::AddBorrowedSegment(const char* p, size_t n) {
  if (n == 0) return;
  segments_.emplace_back(p, n);
  file_size_ += n;
  memory_bytes_ += n;
}

void StepBuffer::AddTensor(std::string_view name, const TensorView& v, double wall_time,
                           bool borrow, std::shared_ptr<const void> keepalive) {
  auto it = record_of_.find(std::string(name));
  if (it != record_of_.end()) {
    records_[it->second].live = false;
    record_of_.erase(it);
    replaced_ = true;
  }
  if (journal_ != nullptr) {
    borrow = false;  // copied into the slot now: the step must not need the process's memory
    keepalive.reset();
  }
  if (keepalive) keepalives_.push_back(std::move(keepalive));
  if (v.dtype == DType::kString) {
    AddStringRecord(name, v, wall_time);
  } else {
    AddRecord(name, v, wall_time, borrow);
  }
}

void StepBuffer::AddRecord(std::string_view name, const TensorView& v, double wall_time,
                           bool borrow) {
  const size_t content = v.nbytes();
  event_codec::TensorEventSpec spec{wall_time, step_, mode_, mode_step_, name, v.dtype, v.shape};
  scratch_.clear();
  event_codec::AppendTensorEventPrefix(spec, content, file_size_ + kHeaderSize, &scratch_);
  const uint64_t payload_len = scratch_.size() + content;

  Record r;
  r.name = std::string(name);
  r.offset = file_size_;
  r.length = payload_len + kHeaderSize + kFooterSize;
  r.head_size = scratch_.size();
  r.content_size = content;
  r.view = v;
  r.view.strings.clear();
  r.borrowed = borrow;
  r.wall_time = wall_time;
  if (borrow) {
    char* p = Reserve(kHeaderSize + scratch_.size());
    record_io::EncodeRecordHeader(payload_len, p);
    std::memcpy(p + kHeaderSize, scratch_.data(), scratch_.size());
    r.head = p + kHeaderSize;
    r.content = static_cast<const char*>(v.data);
    AddBorrowedSegment(r.content, content);
    record_io::EncodeFixed32(Reserve(kFooterSize), kMagicFooter);
  } else {
    char* p = Reserve(kHeaderSize + scratch_.size() + content + kFooterSize);
    record_io::EncodeRecordHeader(payload_len, p);
    std::memcpy(p + kHeaderSize, scratch_.data(), scratch_.size());
    r.head = p + kHeaderSize;
    char* dst = p + kHeaderSize + scratch_.size();
    r.crc = crc32c::Value(scratch_.data(), scratch_.size());
    if (content > 0 && v.is_contiguous()) {
      r.crc = crc32c::CopyAndExtend(r.crc, dst, v.data, content);
    } else if (content > 0) {
      CopyToContiguous(v, dst);
      r.crc = crc32c::Extend(r.crc, dst, content);
    }
    r.content = dst;
    record_io::EncodeFixed32(dst + content, kMagicFooter);
  }
  r.view.data = r.content;
  r.view.strides.clear();
  record_of_[r.name] = records_.size();
  records_.push_back(std::move(r));
}

void StepBuffer::AddStringRecord(std::string_view name, const TensorView& v, double wall_time) {
  event_codec::TensorEventSpec spec{wall_time, step_, mode_, mode_step_, name, v.dtype, v.shape};
  scratch_.clear();
  event_codec::AppendStringTensorEvent(spec, v.strings, &scratch_);
  Record r;
  r.name = std::string(name);
  r.offset = file_size_;
  r.length = scratch_.size() + kHeaderSize + kFooterSize;
  char* p = Reserve(r.length);
  record_io::EncodeRecordHeader(scratch_.size(), p);
  std::memcpy(p + kHeaderSize, scratch_.data(), scratch_.size());
  record_io::EncodeFixed32(p + kHeaderSize + scratch_.size(), kMagicFooter);
  r.head = p + kHeaderSize;
  r.head_size = scratch_.size();
  r.crc = crc32c::Value(r.head, r.head_size);
  r.view.dtype = DType::kString;  // payload is self-contained: no strings kept
  r.wall_time = wall_time;
  record_of_[r.name] = records_.size();
  records_.push_back(std::move(r));
}

void StepBuffer::AddShape(std::string_view name, const std::vector<int64_t>& shape) {
  auto it = shape_of_.find(std::string(name));
  if (it != shape_of_.end()) {
    shapes_[it->second].shape = shape;
    return;
  }
  shape_of_[std::string(name)] = shapes_.size();
  shapes_.push_back({std::string(name), std::string(name), shape});
}

void StepBuffer::Finish() {
  if (!replaced_) return;
  replaced_ = false;
  if (journal_ != nullptr) {
    if (!status_.ok() || !slot_) return;
    // Copy the step aside, then lay its live records out again from the copy.
    std::vector<char> copy(slot_->data(), slot_->data() + file_size_);
    const char* base = slot_->data();
    auto rebase = [&](const char* p) { return p == nullptr ? p : copy.data() + (p - base); };
    std::vector<Record> old = std::move(records_);
    records_.clear();
    record_of_.clear();
    file_size_ = 0;
    memory_bytes_ = 0;
    for (Record& r : old) {
      if (!r.live) continue;
      r.head = rebase(r.head);
      if (r.view.dtype != DType::kString) {
        r.view.data = rebase(static_cast<const char*>(r.view.data));
        AddRecord(r.name, r.view, r.wall_time, false);
        continue;
      }
      CopyStringRecord(r);
    }
    return;
  }
  // Lay the live records out again; the old chunks stay alive until the copies are made.
  std::vector<ChunkPool::Chunk> old_chunks = std::move(chunks_);
  std::vector<Record> old = std::move(records_);
  chunks_.clear();
  records_.clear();
  record_of_.clear();
  segments_.clear();
  pack_ = nullptr;
  pack_used_ = pack_cap_ = 0;
  file_size_ = 0;
  memory_bytes_ = 0;
  for (Record& r : old) {
    if (!r.live) continue;
    if (r.view.dtype != DType::kString) {
      AddRecord(r.name, r.view, r.wall_time, r.borrowed);
      continue;
    }
    CopyStringRecord(r);
  }
  ReleaseChunks(&old_chunks);
}

void StepBuffer::CopyStringRecord(const Record& r) {
  Record n = r;
  n.offset = file_size_;
  char* p = Reserve(r.length);
  std::memcpy(p, r.head - kHeaderSize, r.length);
  n.head = p + kHeaderSize;
  record_of_[n.name] = records_.size();
  records_.push_back(std::move(n));
}

std::vector<IndexTensorEntry> StepBuffer::TensorEntries() const {
  std::vector<IndexTensorEntry> out;
  out.reserve(records_.size());
  for (const Record& r : records_) {
    if (!r.live) continue;
    const uint32_t crc =
        r.borrowed ? crc32c::Extend(crc32c::Value(r.head, r.head_size), r.content, r.content_size)
                   : r.crc;
    out.push_back({r.name, r.offset, r.length, crc});
  }
  return out;
}

}  // namespace trainscope
