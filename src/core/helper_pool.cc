#include "trainscope/helper_pool.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace trainscope::internal {

namespace {

struct Job {
  const std::function<void(size_t)>* fn = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
  int active = 0;  // helpers inside this job (guarded by Impl::mu)
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
  pid_t pid = 0;      // the process that owns the helpers
  std::mutex run_mu;  // one job at a time
  std::mutex mu;      // guards job, generation, started, Job::active
  std::condition_variable work_cv, done_cv;
  Job* job = nullptr;
  uint64_t generation = 0;
  bool started = false;
  std::vector<std::thread> helpers;

  void Helper() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      work_cv.wait(l, [&] { return job != nullptr && generation != seen; });
      seen = generation;
      Job* j = job;
      ++j->active;
      l.unlock();
      Claim(j);
      l.lock();
      if (--j->active == 0) done_cv.notify_all();
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
  if (n <= 1 || d.threads <= 1 || forked || !d.run_mu.try_lock()) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> running(d.run_mu, std::adopt_lock);
  Job j;
  j.fn = &fn;
  j.n = n;
  {
    std::lock_guard<std::mutex> l(d.mu);
    if (!d.started) {
      d.started = true;
      for (int i = 1; i < d.threads; ++i) d.helpers.emplace_back([&d] { d.Helper(); });
    }
    d.job = &j;
    ++d.generation;
  }
  d.work_cv.notify_all();
  Claim(&j);
  std::unique_lock<std::mutex> l(d.mu);
  d.job = nullptr;  // no helper joins from now on; wait for those inside
  d.done_cv.wait(l, [&] { return j.active == 0; });
}

}  // namespace trainscope::internal
