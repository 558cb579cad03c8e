// ChunkPool: recycles the buffers that hold queued steps (private to the store module).
//
// The training thread fills buffers (StepBuffer) and an I/O thread frees them once a step is
// on disk. Fresh memory costs a page fault per 4 KiB on first touch, which made copying a large
// tensor into a new buffer several times slower than copying into one already used; the pool
// hands used buffers back instead, up to `max_bytes` of them.
//
// Thread safety: Get and Put may be called from any thread.
#pragma once

#include <cstddef>
#include <map>
#include <memory>

#include "trainscope/thread_annotations.h"

namespace trainscope {

class ChunkPool {
 public:
  struct Chunk {
    std::unique_ptr<char[]> data;
    size_t capacity = 0;
  };

  explicit ChunkPool(size_t max_bytes) : max_bytes_(max_bytes) {}

  // A buffer of at least n bytes: a pooled one no larger than about twice n, else a new one.
  Chunk Get(size_t n) {
    {
      MutexLock l(&mu_);
      auto it = free_.lower_bound(n);
      if (it != free_.end() && it->first <= std::max(2 * n, n + (size_t{1} << 20))) {
        Chunk c{std::move(it->second), it->first};
        pooled_bytes_ -= it->first;
        free_.erase(it);
        return c;
      }
    }
    return Chunk{std::unique_ptr<char[]>(new char[n]), n};
  }

  // Takes a buffer back (or frees it when the pool is full).
  void Put(Chunk c) {
    if (!c.data) return;
    MutexLock l(&mu_);
    if (pooled_bytes_ + c.capacity > max_bytes_) return;  // c frees its buffer
    pooled_bytes_ += c.capacity;
    free_.emplace(c.capacity, std::move(c.data));
  }

  size_t pooled_bytes() const {
    MutexLock l(&mu_);
    return pooled_bytes_;
  }

 private:
  const size_t max_bytes_;
  mutable Mutex mu_;
  std::multimap<size_t, std::unique_ptr<char[]>> free_ TS_GUARDED_BY(mu_);
  size_t pooled_bytes_ TS_GUARDED_BY(mu_) = 0;
};

}  // namespace trainscope
