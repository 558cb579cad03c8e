// TrialWriter: writes one worker's tensors into a trial folder in smdebug's layout.
//
// Usage (one training thread):
//   TS_ASSIGN_OR_RETURN(auto w, TrialWriter::Open("/tmp/run1", {}));
//   w->BeginStep(/*global_step=*/0, Mode::kTrain, /*mode_step=*/0);
//   w->AddTensor("Net_fc1.weight", view);   // copies the bytes (or borrows with a keepalive)
//   w->EndStep();                           // queues the step; returns at once
//   ...
//   w->Close();                             // drains the queue, writes training_job_end.ts
//
// Background I/O threads encode nothing (encoding happens in AddTensor, which is a header write
// plus one memcpy) and do all I/O: for each step, events/<step>/<step>_<worker>.tfevents via a
// .tmp file and a rename, then index/<step/1000>/<step>_<worker>.json the same way, so readers see
// each step whole or not at all, and never an index entry without its event file.
//
// I/O threads (io_threads): each takes the next queued step and writes its event file, so a
// backlog of steps is written by several threads at once (one thread's buffered write() is bound
// by one core's copy into the page cache). Index files are still published one at a time, in step
// order: a reader never sees step N+1 before step N, and a killed writer leaves a trial whose
// indexed steps are a prefix of those queued (at most an unindexed event file beside them, which
// readers ignore). A second thread runs only while steps wait behind the first, so it takes no
// CPU from the training unless the writer falls behind.
//
// Back-pressure: steps wait in a queue bounded in bytes (max_queue_bytes) and in steps
// (max_queue_steps), both counting the steps being written too. A step is accepted when it fits
// under both limits, or when no other step waits (so a step larger than the limit is never
// refused for its size alone). Otherwise EndStep follows `when_full`: kBlock waits for room
// (nothing is lost; default), kDropStep drops the new step, counts it in stats().steps_dropped
// and says so once on stderr. The bounds are also what a killed process can lose: steps handed
// over (EndStep returned) but not yet indexed (docs/formats/trial.md, Durability).
//
// Errors: an I/O error never reaches the training thread as a crash or an exception. The first
// one is printed once to stderr with its path and errno and kept in first_error(); the failed
// step's temporary files are removed, so the trial stays consistent (complete steps only), and
// later steps are still attempted (the disk may have room again). A lost step (failed, or
// dropped by kDropStep) is recorded in the trial: the first loss writes
// <dir>/incomplete_<worker>.json at once, Close() rewrites it with the final counts and prints
// one summary line (docs/formats/trial.md), and stats() counts every step written, failed and
// dropped.
//
// Thread safety: BeginStep/AddTensor/EndStep/WriteCollections/Close must be called from one
// thread at a time (the training thread). stats() and first_error() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/modes.h"
#include "trainscope/status.h"
#include "trainscope/tensor.h"
#include "trainscope/trial.h"

namespace trainscope {

struct WriterOptions {
  Env* env = nullptr;                        // nullptr = Env::Default()
  std::string worker = "worker_0";           // file-name worker part
  size_t max_queue_bytes = size_t{1} << 30;  // bytes of queued steps (1 GiB)
  // Steps queued or being written; <= 0: no bound but the bytes. The default bounds what a
  // SIGKILL can lose to 8 handed-over steps (and the step in progress).
  int64_t max_queue_steps = 8;
  enum class WhenFull { kBlock, kDropStep } when_full = WhenFull::kBlock;
  bool sync = false;             // fdatasync each file before its rename
  bool write_end_marker = true;  // training_job_end.ts on Close()
  bool quiet = false;            // do not print the first error to stderr
  // Threads that write steps' files (see above). 0 = the default: 2, or 1 where
  // TRAINSCOPE_THREADS=1 or the machine has one core. At most 16.
  int io_threads = 0;
  // Steps handed over survive SIGKILL of the process (docs/formats/journal.md): records are
  // encoded straight into memory-mapped files of <dir>/.trainscope/journal/. Off by default: on
  // ext4 it about doubles the I/O threads' CPU per byte written (journal.md, "Cost, measured"), and
  // without it a SIGKILL loses at most max_queue_steps handed-over steps. TRAINSCOPE_JOURNAL=1
  // turns it on for every writer of the process, TRAINSCOPE_JOURNAL=0 off. Used only with the
  // POSIX Env (env == nullptr or Env::Default()); where the file system cannot (no fallocate or
  // shared maps) the writer says so once and keeps steps in memory.
  bool journal = false;
};

// What a recovery of journaled steps did (RecoverTrial; TrialWriter::Open recovers its worker).
struct RecoveryReport {
  int64_t steps_recovered = 0;              // published by this recovery
  int64_t steps_lost = 0;                   // handed over but damaged: not published
  int64_t slots_removed = 0;                // journal files removed (steps in progress included)
  std::vector<std::string> workers_in_use;  // a live writer holds their journal: left alone
  std::vector<std::string> problems;        // one line per lost step or unreadable file
};

// Publishes, in step order, the steps that writers of `dir` handed over and did not publish
// before they died (docs/formats/journal.md, Recovery); workers whose writer still runs are left
// alone. Readers never see a half-recovered step. A step that fails its checks stops that
// worker's recovery: it and the later ones are reported and recorded in the incomplete marker.
// OK with an empty report when there is no journal. Errors only for an unreadable folder.
Result<RecoveryReport> RecoverTrial(const std::string& dir);

struct WriterStats {
  int64_t steps_written = 0;
  int64_t steps_dropped = 0;
  int64_t steps_failed = 0;  // lost to I/O errors
  int64_t tensors_written = 0;
  uint64_t bytes_written = 0;  // event-file bytes
  uint64_t queue_bytes = 0;    // bytes waiting now
  uint64_t queue_high_water = 0;
};

class TrialWriter {
 public:
  // Creates the trial folder if needed. Fails if it cannot be created.
  static Result<std::unique_ptr<TrialWriter>> Open(const std::string& dir, WriterOptions options);
  ~TrialWriter();  // Close()s if not closed

  TrialWriter(const TrialWriter&) = delete;
  TrialWriter& operator=(const TrialWriter&) = delete;

  // REQUIRES: no step open; global_step greater than every step begun before.
  Status BeginStep(int64_t global_step, Mode mode, int64_t mode_step);
  // Adds a tensor to the open step, copying its bytes. A name already added in this step is
  // replaced. Its event's wall_time is `wall_time_s` (epoch seconds; 0: now, the default).
  // REQUIRES: a step is open.
  Status AddTensor(std::string_view name, const TensorView& v, double wall_time_s = 0);
  // As AddTensor, but borrows v's bytes without copying them: `keepalive` must own them and the
  // caller must not modify them until the writer drops `keepalive` (after the step is written).
  // REQUIRES: v is contiguous.
  Status AddTensorNoCopy(std::string_view name, const TensorView& v,
                         std::shared_ptr<const void> keepalive);
  // Records a tensor's shape only (smdebug's save_shape): goes to the index's shape_payload.
  Status AddShape(std::string_view name, const std::vector<int64_t>& shape);
  // Queues the open step for writing (see back-pressure above). A step with nothing added
  // writes no files.
  Status EndStep();
  // True between BeginStep and EndStep.
  bool step_open() const;
  // Records in the open step's index which loss tensors each closure evaluation of its optimizer
  // steps saved (meta.closure_evaluations, docs/formats/index.md); replaces an earlier record of
  // the step. Written only if the step has files. InvalidArgument when no step is open.
  Status SetClosureSteps(std::vector<ClosureStep> closures);
  // Records in the open step's index how many times the model was called in the step
  // (meta.model_calls, docs/formats/index.md; written when 2 or more). Written only if the step
  // has files. InvalidArgument when no step is open.
  Status SetModelCalls(int64_t calls);

  // Writes collections/000000000/<worker>_collections.json atomically (now, on this thread).
  Status WriteCollections(std::string_view json);

  // Blocks until every queued step is on disk. Returns first_error().
  Status Flush();
  // Ends an open step, drains the queue, stops the threads, writes the incomplete marker if a
  // step was lost, then the end marker (if asked; also when steps were lost: the job ended).
  // Idempotent. Returns first_error().
  Status Close();

  Status first_error() const;
  WriterStats stats() const;
  const std::string& dir() const;
  const std::string& worker() const;

  class Impl;

 private:
  explicit TrialWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes the end marker training_job_end.ts into `dir`.
Status WriteEndOfJob(Env* env, const std::string& dir);

}  // namespace trainscope
