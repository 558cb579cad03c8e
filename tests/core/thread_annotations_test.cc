// Mutex, MutexLock and CondVar (trainscope/thread_annotations.h): the lock excludes, the condition
// variable wakes a waiter and times out. The annotations themselves are checked by Clang
// (scripts/check-style.sh thread-safety), which this file is compiled under too.
#include "trainscope/thread_annotations.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace trainscope {
namespace {

class Counter {
 public:
  void Add() TS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ++count_;
    cv_.SignalAll();
  }
  // Waits until the count reaches `n`; false after `timeout`.
  bool WaitFor(int n, std::chrono::milliseconds timeout) TS_EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu_);
    while (count_ < n) {
      if (!cv_.WaitUntil(&mu_, deadline) && count_ < n) return false;
    }
    return true;
  }
  int count() TS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return count_;
  }
  Mutex* mu() TS_RETURN_CAPABILITY(mu_) { return &mu_; }

 private:
  Mutex mu_;
  CondVar cv_;
  int count_ TS_GUARDED_BY(mu_) = 0;
};

TEST(ThreadAnnotationsTest, MutexExcludesAndCountsEveryAdd) {
  Counter counter;
  std::thread a([&] {
    for (int i = 0; i < 10000; ++i) counter.Add();
  });
  std::thread b([&] {
    for (int i = 0; i < 10000; ++i) counter.Add();
  });
  a.join();
  b.join();
  EXPECT_EQ(counter.count(), 20000);
}

// True when `mu` was free (it is released again).
bool TryAndRelease(Mutex* mu) {
  if (!mu->TryLock()) return false;
  mu->Unlock();
  return true;
}

TEST(ThreadAnnotationsTest, TryLockFailsWhileHeld) {
  Counter counter;
  bool elsewhere = true;
  {
    MutexLock lock(counter.mu());
    std::thread other([&] { elsewhere = TryAndRelease(counter.mu()); });
    other.join();
  }
  EXPECT_FALSE(elsewhere);
  EXPECT_TRUE(TryAndRelease(counter.mu()));
}

TEST(ThreadAnnotationsTest, CondVarWakesTheWaiter) {
  Counter counter;
  std::thread adder([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    counter.Add();
  });
  EXPECT_TRUE(counter.WaitFor(1, std::chrono::seconds(30)));
  adder.join();
}

TEST(ThreadAnnotationsTest, CondVarTimesOut) {
  Counter counter;
  EXPECT_FALSE(counter.WaitFor(1, std::chrono::milliseconds(30)));
  EXPECT_EQ(counter.count(), 0);
}

}  // namespace
}  // namespace trainscope
