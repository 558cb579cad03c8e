#include "trainscope/helper_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "trainscope/reductions.h"

namespace trainscope::internal {
namespace {

TEST(HelperPoolTest, EveryChunkRunsExactlyOnce) {
  auto& pool = HelperPool::Shared();
  EXPECT_GE(pool.threads(), 1);
  for (size_t n : {0u, 1u, 2u, 7u, 1000u}) {
    std::vector<std::atomic<int>> runs(n);
    pool.Run(n, [&](size_t i) { runs[i].fetch_add(1); });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "chunk " << i << " of " << n;
  }
}

// With more than one thread allowed, helpers take chunks of a long job (each chunk sleeps, so a
// helper gets a core even on a busy machine).
TEST(HelperPoolTest, HelpersTakeChunks) {
  auto& pool = HelperPool::Shared();
  if (pool.threads() < 2) GTEST_SKIP() << "one thread (TRAINSCOPE_THREADS=1 or one core)";
  std::mutex mu;
  std::set<std::thread::id> ids;
  pool.Run(200, [&](size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> l(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_GE(ids.size(), 2u);
}

// Two threads running jobs at once: one gets the helpers, the other runs alone; both complete.
TEST(HelperPoolTest, ConcurrentJobsBothComplete) {
  auto& pool = HelperPool::Shared();
  std::vector<std::atomic<int>> a(500), b(500);
  std::thread other([&] {
    for (int k = 0; k < 20; ++k) pool.Run(a.size() / 20, [&](size_t i) { a[k * 25 + i]++; });
  });
  for (int k = 0; k < 20; ++k) pool.Run(b.size() / 20, [&](size_t i) { b[k * 25 + i]++; });
  other.join();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].load(), 1);
    EXPECT_EQ(b[i].load(), 1);
  }
}

// A child process after fork() has no helpers: its jobs run on the caller, and it exits cleanly.
TEST(HelperPoolTest, WorksInAForkedChild) {
  auto& pool = HelperPool::Shared();
  std::atomic<int> warm{0};
  pool.Run(64, [&](size_t) { warm++; });  // the helpers exist now
  ASSERT_EQ(warm.load(), 64);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<int> runs(100, 0);
    HelperPool::Shared().Run(runs.size(), [&](size_t i) { runs[i]++; });
    for (int r : runs) {
      if (r != 1) _exit(1);
    }
    std::exit(0);  // runs static destructors and atexit handlers
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A large tensor is reduced in chunks over the helpers: the result does not depend on which
// thread reduced which chunk (the same bits every time) and agrees with the portable loop.
TEST(HelperPoolTest, ParallelReductionsAreDeterministic) {
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.25f, 1.5f);
  std::vector<float> x(1'000'003);
  for (auto& v : x) v = d(rng);
  TensorView view{DType::kF32, x.data(), {static_cast<int64_t>(x.size())}, {}, {}};
  const StatsNeeds no_prod{true, true, false, true, true};  // products take the portable loop
  auto first = ComputeStats(view, no_prod);
  ASSERT_TRUE(first.ok());
  for (int k = 0; k < 10; ++k) {
    auto again = ComputeStats(view, no_prod);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->sum, first->sum);
    EXPECT_EQ(again->m2, first->m2);
    EXPECT_EQ(again->mean, first->mean);
    EXPECT_EQ(again->min, first->min);
  }
  std::vector<Reduction> fast;
  for (const char* r : {"mean", "l2", "std", "abs_max", "zero_fraction"}) {
    fast.push_back(*ParseReduction(r));
  }
  auto ref = ComputeStatsPortable(view);
  auto par = ComputeStats(view, StatsNeeds::For(fast));
  ASSERT_TRUE(ref.ok() && par.ok());
  for (Reduction r : fast) {
    EXPECT_NEAR(par->Value(r), ref->Value(r), 1e-9 * std::fabs(ref->Value(r)) + 1e-12)
        << ReductionOpName(r.op);
  }
  EXPECT_EQ(par->count, static_cast<int64_t>(x.size()));
}

}  // namespace
}  // namespace trainscope::internal
