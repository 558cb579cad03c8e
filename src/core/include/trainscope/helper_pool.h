// A few helper threads that lend a hand with one data-parallel job at a time: the reductions of a
// large tensor (and the copy of a raw one) while the training thread waits for them.
//
//   HelperPool::Shared().Run(num_chunks, [&](size_t i) { ... chunk i ... });
//
// The calling thread takes chunks too (claimed with one atomic counter), so it never waits for
// a helper that has not woken up: on a busy machine the job just runs on the caller, and it
// waits at most for the chunks a helper is in the middle of. Results must not depend on which
// thread ran a chunk (callers write chunk i's result to slot i and combine them in order).
//
// One job at a time: a caller that finds the pool busy (another thread's job) runs its chunks
// alone. In a child process after fork() (the helpers do not exist there) every job runs on the
// caller. Threads: TRAINSCOPE_THREADS (the total, the caller included; 1 = no helpers), else the
// hardware's threads, at most 4 (a few cores saturate memory bandwidth). Started at first use.
// Thread safety: Run may be called from any thread.
#pragma once

#include <cstddef>
#include <functional>

namespace trainscope::internal {

class HelperPool {
 public:
  static HelperPool& Shared();

  // Calls fn(i) once for each i in [0, n), on this thread and on free helpers; returns when all
  // are done. fn must not throw.
  void Run(size_t n, const std::function<void(size_t)>& fn);

  // Threads a job may use, the caller included (>= 1).
  int threads() const;

  HelperPool(const HelperPool&) = delete;
  HelperPool& operator=(const HelperPool&) = delete;
  ~HelperPool() = delete;  // the shared pool lives as long as the process

 private:
  explicit HelperPool(int threads);
  struct Impl;
  Impl* impl_;
};

}  // namespace trainscope::internal
