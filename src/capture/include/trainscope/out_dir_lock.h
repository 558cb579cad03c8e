// OutDirLock: a hook owns its out_dir for one run (docs/formats/run_lock.md, "A hook without
// trainscope run").
//
// A hook that writes a trial without a `trainscope run` above it takes two flock(2) locks under
// <out_dir>/.trainscope/, held until the hook closes:
//   run.lock                shared: hooks of one or several workers coexist, a `trainscope run`
//                           (which takes it exclusively) is kept out, and the hook is kept out
//                           while a run holds it;
//   worker_<rank>.lock      exclusive, with the owner's name in it (pid, host, started,
//                           command, worker, world_size): a second training writing the same
//                           worker's files is refused, the other ranks of a multi-worker job
//                           (worker_1, worker_2 ...) are not.
// No lock is taken when the hook writes the trial of the `trainscope run` that started it
// (TRAINSCOPE_RUN=1 and TRAINSCOPE_OUT_DIR naming the same folder: the run holds run.lock), or
// when TRAINSCOPE_LOCK=0 (smdebug's behaviour: a second writer overwrites).
//
// Hooks of one process share the locks of a folder (a notebook cell creating its hook again
// must not be refused by the hook of the previous run of the cell); a forked child inherits them.
//
// Thread safety: Acquire and Release may be called from any thread (a process-wide mutex).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "trainscope/env.h"
#include "trainscope/status.h"

namespace trainscope::capture {

class OutDirLock {
 public:
  // Takes the locks for `worker` of `out_dir` (creating <out_dir>/.trainscope/), or returns an
  // empty lock when none is needed (see above; also for an `env` other than Env::Default(), an
  // in-memory or fault-injecting one: flock(2) needs the real file system). Unavailable, naming
  // the owner and what to do, when another writer holds them; IOError when the files cannot be
  // made or locked. `env`: nullptr = Env::Default().
  static Result<std::unique_ptr<OutDirLock>> Acquire(const std::string& out_dir,
                                                     const std::string& worker, int world_size,
                                                     Env* env = nullptr);
  ~OutDirLock();  // releases (the last hook of the process on the folder unlocks)
  OutDirLock(const OutDirLock&) = delete;
  OutDirLock& operator=(const OutDirLock&) = delete;

  // False for the empty lock (none needed).
  bool held() const { return !key_.empty(); }

 private:
  explicit OutDirLock(std::string key) : key_(std::move(key)) {}
  std::string key_;  // the worker lock file's path; empty: none taken
};

// The owner named in a lock file's text (one JSON line): "pid 42 on box, started ..., running:
// python train.py" plus ", writing worker_0" when it names a worker; `fallback` when the text
// is not JSON.
std::string DescribeLockOwner(const std::string& text, const std::string& fallback);

// The hooks that hold worker locks of `out_dir` now, described ("; "-separated), for the
// message of a `trainscope run` refused by them; empty when none is found. Probes each
// .trainscope/worker_*.lock with a non-blocking shared lock, released at once.
std::string DescribeHookWriters(const std::string& out_dir);

// Who still writes `out_dir`, asked of its run.lock (held exclusively by a `trainscope run`,
// shared by hooks) with a non-blocking exclusive flock(2), released at once: an empty string when
// nobody holds it, else the holder described (DescribeHookWriters, or "a `trainscope run`");
// nullopt when the folder has no run.lock (a trial written by smdebug, or with TRAINSCOPE_LOCK=0:
// nobody to ask). For `trainscope status` and `trainscope recover --end`.
std::optional<std::string> DescribeFolderWriters(const std::string& out_dir);

}  // namespace trainscope::capture
