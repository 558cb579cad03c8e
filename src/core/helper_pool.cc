#include "trainscope/helper_pool.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "trainscope/thread_annotations.h"

namespace trainscope::internal {

namespace {

struct Job {
  const std::function<void(size_t)>* fn = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
};

void Claim(Job* j) {
  for (size_t i = j->next.fetch_add(1, std::memory_order_relaxed); i < j->n;
       i = j->next.fetch_add(1, std::memory_order_relaxed)) {
    (*j->fn)(i);
  }
}

int ThreadsFromEnv() {
  if (const char* e = std::getenv("TRAINSCOPE_THREADS"); e != nullptr && *e != '\0') {
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (end != e && *end == '\0' && v >= 1) return static_cast<int>(std::min(v, 64L));
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(hw, 1u, 4u));
}

}  // namespace

struct HelperPool::Impl {
  int threads = 1;
  pid_t pid = 0;  // the process that owns the helpers
  Mutex run_mu;   // one job at a time
  Mutex mu;       // guards the fields below
  CondVar work_cv, done_cv;
  Job* job TS_GUARDED_BY(mu) = nullptr;
  // Helpers inside the job being run (one job at a time: run_mu), whether or not `job` still
  // points to it.
  int active TS_GUARDED_BY(mu) = 0;
  uint64_t generation TS_GUARDED_BY(mu) = 0;
  bool started TS_GUARDED_BY(mu) = false;
  std::vector<std::thread> helpers TS_GUARDED_BY(mu);

  void Helper() TS_EXCLUDES(mu) {
    uint64_t seen = 0;
    mu.Lock();
    for (;;) {
      while (job == nullptr || generation == seen) work_cv.Wait(&mu);
      seen = generation;
      Job* j = job;
      ++active;
      mu.Unlock();
      Claim(j);
      mu.Lock();
      if (--active == 0) done_cv.SignalAll();
    }
  }
};

HelperPool::HelperPool(int threads) : impl_(new Impl) {
  impl_->threads = threads;
  impl_->pid = getpid();
}

HelperPool& HelperPool::Shared() {
  // Never destroyed: the helpers wait on their condition variable until the process ends, and no
  // static destructor (or forked child) depends on the order of exit.
  static HelperPool* pool = new HelperPool(ThreadsFromEnv());
  return *pool;
}

int HelperPool::threads() const { return impl_->threads; }

void HelperPool::Run(size_t n, const std::function<void(size_t)>& fn) {
  Impl& d = *impl_;
  const bool forked = getpid() != d.pid;
  if (n <= 1 || d.threads <= 1 || forked || !d.run_mu.TryLock()) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  Job j;
  j.fn = &fn;
  j.n = n;
  {
    MutexLock l(&d.mu);
    if (!d.started) {
      d.started = true;
      for (int i = 1; i < d.threads; ++i) d.helpers.emplace_back([&d] { d.Helper(); });
    }
    d.job = &j;
    ++d.generation;
  }
  d.work_cv.SignalAll();
  Claim(&j);
  {
    MutexLock l(&d.mu);
    d.job = nullptr;  // no helper joins from now on; wait for those inside
    while (d.active != 0) d.done_cv.Wait(&d.mu);
  }
  d.run_mu.Unlock();
}

}  // namespace trainscope::internal
