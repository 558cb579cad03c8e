// Trial::Impl: the state behind trainscope::Trial (include/trainscope/trial.h).
//
// Locks, always taken in this order (a thread never blocks on an earlier lock while holding a
// later one):
//   notifier_mu_  exclusive use of the scanner's inotify notifier. WaitForChange holds it while
//                 it blocks for events; Refresh only try-locks it (and lists folders instead
//                 when it is busy), so a waiting thread never delays a query.
//   refresh_mu_   serializes refreshes: the scanner, the retry list, reading index files.
//   mu_           the index and the step tracker; held only to merge parsed files or to answer
//                 a query, never during file I/O or value decoding.
// The ValueReader has its own lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "store/index_scanner.h"
#include "store/step_tracker.h"
#include "store/trial_index.h"
#include "store/value_reader.h"
#include "trainscope/thread_annotations.h"
#include "trainscope/trial.h"

namespace trainscope {

// What one worker saved of one tensor at one step (copied out of the index under mu_).
struct StepEntries {
  struct Entry {
    uint8_t kind;  // LocationKind
    bool has_crc;
    uint32_t crc32c;
    uint64_t offset;  // of the framed record
    uint64_t length;  // framed record bytes
  };
  std::string tensor;
  int64_t step = 0;           // as queried: a step of `mode`
  Mode mode = Mode::kGlobal;  // of the query
  int64_t global_step = 0;
  std::string worker;
  std::string event_file;      // relative to the trial root
  std::vector<Entry> entries;  // value and reductions of this worker (not the shape)
  std::vector<int64_t> shape;  // the saved shape's dims, if has_shape
  bool has_shape = false;

  const Entry* Find(uint8_t kind) const {
    for (const Entry& e : entries) {
      if (e.kind == kind) return &e;
    }
    return nullptr;
  }
  bool HasReductions() const {
    for (const Entry& e : entries) {
      if (LocationKind::IsReduction(e.kind)) return true;
    }
    return false;
  }
};

// How much of `delay` is still to wait, at `now`, after an end marker written at `written`
// (microseconds since the epoch; an error when unknown). Trial::Impl::EndDelayLeft.
std::chrono::microseconds EndDelayLeft(std::chrono::microseconds delay,
                                       const Result<uint64_t>& written, uint64_t now);

class Trial::Impl {
 public:
  Impl(Env* env, std::string path, TrialOptions options, std::vector<std::string> workers,
       int num_workers, std::vector<CollectionInfo> collections,
       std::map<std::string, bool> parameters, std::vector<ModuleInfo> modules,
       std::vector<std::string> environments);

  // trial_refresh.cc
  Status Init();
  Status Refresh(bool* changed);
  Status MaybeRefresh();
  Status WaitForChange(std::chrono::milliseconds timeout);
  // Once all steps are loaded: closes the inotify notifier unless another thread is using it
  // (then a later call does).
  void CloseNotifierIfDone();

  // trial_query.cc
  Result<std::vector<std::string>> TensorNames(Mode mode, std::optional<int64_t> step,
                                               const std::string& regex,
                                               const std::string& collection);
  bool HasTensor(const std::string& name);
  std::vector<int64_t> Steps(Mode mode, bool show_incomplete);
  std::vector<Mode> Modes();
  Result<std::pair<Mode, int64_t>> ModeOf(int64_t global_step);
  Result<int64_t> GlobalStep(Mode mode, int64_t mode_step);
  StepState HasPassedStep(int64_t step, Mode mode);
  bool loaded_all_steps() const;
  bool training_ended();
  int64_t last_complete_step() const;
  Result<std::vector<int64_t>> TensorSteps(const std::string& tensor, Mode mode,
                                           bool show_incomplete);
  Result<std::vector<std::string>> TensorWorkers(const std::string& tensor, int64_t step,
                                                 Mode mode);
  Result<Tensor> Value(const std::string& tensor, int64_t step, Mode mode,
                       const std::string& worker);
  Result<double> ReductionValue(const std::string& tensor, int64_t step, Reduction r, Mode mode,
                                const std::string& worker);
  Result<std::vector<std::pair<Reduction, double>>> SavedReductions(const std::string& tensor,
                                                                    int64_t step, Mode mode,
                                                                    const std::string& worker);
  Result<std::vector<int64_t>> Shape(const std::string& tensor, int64_t step, Mode mode,
                                     const std::string& worker);
  std::vector<ClosureStep> ClosureSteps(int64_t step, const std::string& worker);
  int64_t ModelCalls(int64_t step, const std::string& worker);

 private:
  friend class Trial;  // reads the fields fixed at Open

  Env* const env_;
  const std::string path_;
  const TrialOptions options_;
  // From the collections files; fixed at Open.
  const std::vector<std::string> workers_;
  const int num_workers_;
  const std::vector<CollectionInfo> collections_;
  const std::map<std::string, bool> parameters_;  // _meta.parameters: name -> trainable
  const std::vector<ModuleInfo> modules_;         // _meta.modules, in forward order
  const std::vector<std::string> environments_;   // _meta.environments

 public:
  // Trial::DamagedIndexFiles.
  std::vector<std::string> Damaged() const {
    MutexLock l(&mu_);
    return damaged_;
  }

 private:
  // trial_refresh.cc
  // How much of options_.end_delay is still to wait, the end marker's age deducted.
  std::chrono::microseconds EndDelayLeft();
  Status RefreshLocked(std::vector<FoundIndexFile>* found, bool have_notifier, bool* changed)
      TS_REQUIRES(refresh_mu_) TS_EXCLUDES(mu_);
  Status Scan(bool have_notifier, std::vector<FoundIndexFile>* found) TS_REQUIRES(refresh_mu_)
      TS_EXCLUDES(mu_);
  Status Load(std::vector<FoundIndexFile>& found, bool* changed) TS_REQUIRES(refresh_mu_)
      TS_EXCLUDES(mu_);

  // trial_query.cc
  // The entries of `tensor` at `step` of `mode` for `worker` ("" = the first worker by name).
  // Refreshes once on a miss; maps a miss to smdebug's exceptions (see trial.h).
  Result<StepEntries> Lookup(const std::string& tensor, int64_t step, Mode mode,
                             const std::string& worker);
  Status MissError(const std::string& tensor, int64_t step, Mode mode);
  Result<Tensor> Read(const StepEntries& e, const StepEntries::Entry& entry);
  std::string Describe(const std::string& tensor, int64_t step, Mode mode) const;

  // The scanner's atomic watching(), from any thread, with or without a lock.
  bool Watching() const TS_NO_THREAD_SAFETY_ANALYSIS { return scanner_.watching(); }
  // scanner_.WaitEvents, under notifier_mu_ alone: it touches only the notifier, which
  // notifier_mu_ guards, so refreshes (List) go on meanwhile under refresh_mu_.
  Status WaitNotifierEvents(std::chrono::milliseconds timeout, std::vector<DirChange>* changes)
      TS_REQUIRES(notifier_mu_) TS_NO_THREAD_SAFETY_ANALYSIS {
    return scanner_.WaitEvents(timeout, changes);
  }

  TimedMutex notifier_mu_ TS_ACQUIRED_BEFORE(refresh_mu_);
  Mutex refresh_mu_ TS_ACQUIRED_BEFORE(mu_);
  // Its notifier also needs notifier_mu_ (Drain, HandleEvents, StopWatching: see Scan and
  // WaitForChange); Watching() and WaitNotifierEvents() are the two ways around refresh_mu_.
  IndexScanner scanner_ TS_GUARDED_BY(refresh_mu_);
  std::vector<FoundIndexFile> retry_ TS_GUARDED_BY(refresh_mu_);  // files to read again
  static constexpr size_t kMaxDamaged = 1000;
  std::vector<std::string> damaged_ TS_GUARDED_BY(mu_);  // DamagedIndexFiles()

  mutable Mutex mu_;
  TrialIndex index_ TS_GUARDED_BY(mu_);
  StepTracker tracker_ TS_GUARDED_BY(mu_);
  bool refreshed_once_ TS_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point last_refresh_ TS_GUARDED_BY(mu_);

  ValueReader values_;
};

}  // namespace trainscope
