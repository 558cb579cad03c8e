// Clang thread-safety annotations, and the mutex, scoped lock and condition variable they can see.
//
// The annotations state a locking contract the compiler checks: TS_GUARDED_BY(mu_) on a member
// says it is read and written only with mu_ held; TS_REQUIRES(mu_) on a function says its caller
// holds mu_; TS_EXCLUDES(mu_) says the caller must not hold it (the function takes it). Clang with
// -Wthread-safety checks every access against them (scripts/check-style.sh thread-safety, a suite
// of scripts/run-tests.sh, with -Werror); under other compilers they expand to nothing.
//
// libstdc++'s std::mutex carries no capability attribute, so Clang cannot see it taken: a member
// that a mutex guards uses trainscope::Mutex, locked with MutexLock (UniqueMutexLock where the
// scope releases it for a while), waited on with CondVar. A holder that must not wait (or not
// past a deadline) uses TimedMutex, try-locked, then held to the end of the scope by
// TimedMutexLock.
//
// Thread safety: Mutex, TimedMutex and CondVar are the synchronisation and are thread-safe; a
// MutexLock, UniqueMutexLock or TimedMutexLock belongs to the thread that made it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define TS_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define TS_THREAD_ANNOTATION_(x)
#endif

// On a class: its objects are a capability (a lock) named `x` in diagnostics.
#define TS_CAPABILITY(x) TS_THREAD_ANNOTATION_(capability(x))
// On a class: an RAII holder of a capability.
#define TS_SCOPED_CAPABILITY TS_THREAD_ANNOTATION_(scoped_lockable)
// On a member: read and written only with `x` held.
#define TS_GUARDED_BY(x) TS_THREAD_ANNOTATION_(guarded_by(x))
// On a pointer member: what it points to is read and written only with `x` held.
#define TS_PT_GUARDED_BY(x) TS_THREAD_ANNOTATION_(pt_guarded_by(x))
// On a mutex member: taken only after (before) the mutexes named, never the other way round.
#define TS_ACQUIRED_AFTER(...) TS_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#define TS_ACQUIRED_BEFORE(...) TS_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
// On a function: the caller holds the capabilities named.
#define TS_REQUIRES(...) TS_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
// On a function: it takes (releases) the capabilities named, or *this for a lock's own methods.
#define TS_ACQUIRE(...) TS_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define TS_RELEASE(...) TS_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define TS_TRY_ACQUIRE(...) TS_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
// On a function: the caller must not hold the capabilities named (the function takes them).
#define TS_EXCLUDES(...) TS_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
// On a function: it returns a reference to the capability named.
#define TS_RETURN_CAPABILITY(x) TS_THREAD_ANNOTATION_(lock_returned(x))
// On a function: the analysis skips its body. Say in a comment why the contract holds there.
#define TS_NO_THREAD_SAFETY_ANALYSIS TS_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace trainscope {

// std::mutex that Clang's analysis can see. Not recursive.
class TS_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() TS_ACQUIRE() { mu_.lock(); }
  void Unlock() TS_RELEASE() { mu_.unlock(); }
  // Returns true when the mutex was free and is now held.
  bool TryLock() TS_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction.
class TS_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) TS_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() TS_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// As MutexLock, but the holder may release the mutex inside its scope and take it again (as with
// std::unique_lock), e.g. to do slow work unlocked in the middle of a locked loop. Releases it at
// the end of the scope only if held then.
class TS_SCOPED_CAPABILITY UniqueMutexLock {
 public:
  explicit UniqueMutexLock(Mutex* mu) TS_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~UniqueMutexLock() TS_RELEASE() {
    if (held_) mu_->Unlock();
  }
  UniqueMutexLock(const UniqueMutexLock&) = delete;
  UniqueMutexLock& operator=(const UniqueMutexLock&) = delete;

  // REQUIRES: held.
  void Unlock() TS_RELEASE() {
    held_ = false;
    mu_->Unlock();
  }
  // REQUIRES: not held.
  void Lock() TS_ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// std::timed_mutex that Clang's analysis can see. Not recursive. Take it with TryLock or
// TryLockUntil, then hand it to a TimedMutexLock:
//   if (!mu_.TryLock()) return;
//   TimedMutexLock lock(&mu_, std::adopt_lock);
class TS_CAPABILITY("mutex") TimedMutex {
 public:
  TimedMutex() = default;
  TimedMutex(const TimedMutex&) = delete;
  TimedMutex& operator=(const TimedMutex&) = delete;

  void Lock() TS_ACQUIRE() { mu_.lock(); }
  void Unlock() TS_RELEASE() { mu_.unlock(); }
  // Returns true when the mutex was free and is now held.
  bool TryLock() TS_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Waits for the mutex until `deadline` at the latest. Returns true when it is now held.
  template <typename Clock, typename Duration>
  bool TryLockUntil(std::chrono::time_point<Clock, Duration> deadline) TS_TRY_ACQUIRE(true) {
    return mu_.try_lock_until(deadline);
  }

 private:
  std::timed_mutex mu_;
};

// Holds a TimedMutex that the caller has just taken (adopts it) and releases it at the end of
// the scope. REQUIRES: mu held.
class TS_SCOPED_CAPABILITY TimedMutexLock {
 public:
  TimedMutexLock(TimedMutex* mu, std::adopt_lock_t) TS_REQUIRES(mu) : mu_(mu) {}
  ~TimedMutexLock() TS_RELEASE() { mu_->Unlock(); }
  TimedMutexLock(const TimedMutexLock&) = delete;
  TimedMutexLock& operator=(const TimedMutexLock&) = delete;

 private:
  TimedMutex* const mu_;
};

// A condition variable waited on under a Mutex (always the same one for one CondVar). Wait with
// the condition in a loop:
//   MutexLock lock(&mu_);
//   while (!ready_) cv_.Wait(&mu_);
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // REQUIRES: mu held. Releases it while waiting and holds it again on return (which may be
  // spurious: check the condition again).
  void Wait(Mutex* mu) TS_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's MutexLock releases it
  }
  // As Wait, for at most `timeout`. Returns false when the time ran out.
  template <typename Rep, typename Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout) TS_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  // As Wait, until `deadline`. Returns false when it has passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex* mu, std::chrono::time_point<Clock, Duration> deadline) TS_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace trainscope
