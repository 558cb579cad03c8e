// Hook: decides which tensors to save at which step and writes them into a trial, for native
// (C++) trainers and, through the Python bindings, for trainscope.pytorch.
//
// Usage:
//   TS_ASSIGN_OR_RETURN(auto hook, Hook::Create(config));   // or Hook::CreateFromJsonFile()
//   hook->SetMode(Mode::kTrain);
//   for (...) {
//     Hook::StepScope step(*hook);                 // step boundary (Step() ... EndStep())
//     if (hook->StopRequested()) break;            // a rule asked to stop (see below)
//     if (hook->is_saving_step()) {
//       (void)hook->SaveTensor("Net_fc1.weight", view);  // as the collections say, or not at all
//     }
//     (void)hook->SaveScalar("loss", loss);  // "scalar/loss", always written
//   }
//   TS_RETURN_IF_ERROR(hook->Close());  // saving fails open: Close() returns the first error
//
// Steps (smdebug's semantics): counters start at -1, so the first Step() is global step 0 and
// step 0 of the current mode; the global step grows in every mode; each mode has its own step.
// A step is a saving step when at least one included collection is due at the current mode step
// (gradients and optimizer_variables are never due in EVAL or PREDICT). On any other step every
// Save* call returns at once, so a caller may check is_saving_step() and do nothing at all.
//
// Plan(name) says what a tensor of that name gets at the current step (raw value, reductions,
// shape, TensorBoard histogram). Membership of a name in the collections is computed once
// (regexes run once per name); the plan for a set of due collections is cached, so repeated
// lookups are two hash hits.
//
// Fail open: Save*, Step and Close never throw and never stop training on an error. The first
// error is printed once to stderr with the tensor and step (unless config.quiet); later ones are
// counted (stats().errors). Configuration errors are returned by Create (and by Prepare, for
// collections changed after Create). Write failures (a full disk, a read-only folder) are the
// writer's to report (once, with the file and errno; TrialWriter in writer.h): the steps lost
// are counted in stats().steps_failed / steps_dropped, never in steps_saved, and recorded in the
// trial as incomplete_<worker>.json beside the end marker (docs/formats/trial.md).
//
// Stop requests: at a Step() the hook checks whether a rule's StopTraining action (or a
// person: trainscope_request_stop) asked the training to stop, i.e. whether
// <out_dir>/rule-output/stop_training.json exists, or smdebug's file named by
// SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE when that variable is set at Create
// (docs/formats/stop_signal.md). The check is StopSignal::Check (stop_signal.h): one access(2)
// through the Env, two with smdebug's variable, nothing more while no file is there. It runs at
// the first Step() and then at each Step() that comes config.stop_check_interval_ms (10 ms) or
// more after the last check (at every Step() when that is 0, or when steps are longer): a
// request is seen within 10 ms of training, and a training of 0.3 ms steps pays a clock read
// instead of a syscall on most steps. Every rank checks, writing or not (a dry-run hook without
// out_dir has no trial to watch). The first Step()
// that sees a file reads the reason (StopSignal::Read), Close()s the hook (the step in progress
// and every saved step reach disk, then the end marker), prints once to stderr, as
// trainscope.pytorch does and whatever config.quiet says (the training ends early: say why),
//   trainscope: training stopped on request of <StopRequest::ToString(), escaped>
// and returns false; from then on StopRequested() is true and stop_reason() says why. The hook
// never throws or exits for it: the trainer ends its loop.
//
// Ownership: a hook that writes takes the out_dir's lock at Create, unless the `trainscope run`
// that started it holds the folder (OutDirLock, out_dir_lock.h; docs/formats/run_lock.md). When
// another training holds it, Create still succeeds but the hook writes nothing (writes() is
// false, stats().out_dir_refused is true) and says so once on stderr, naming the owner.
//
// Workers: worker_<rank>. With include_workers = kOne only rank 0 writes (other ranks plan and
// write nothing); with kAll every rank writes its own files and the collections file says
// num_workers = world size. The end marker training_job_end.ts is written once ALL writing
// workers have closed with their steps on disk (each records <out_dir>/.trainscope/done/<worker>
// first; the last to finish writes the marker), so a reader never sees it early.
//
// Thread safety: one thread at a time (the training thread); the bindings serialise calls.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/collection.h"
#include "trainscope/hook_config.h"
#include "trainscope/modes.h"
#include "trainscope/reductions.h"
#include "trainscope/status.h"
#include "trainscope/stop_signal.h"
#include "trainscope/tensor.h"
#include "trainscope/trial.h"

namespace trainscope {

// What to do with one tensor at the current step.
struct TensorPlan {
  bool save = false;                  // anything at all (false: skip the tensor)
  bool save_raw = false;              // the value itself
  bool save_shape = false;            // its shape (index shape_payload)
  std::vector<Reduction> reductions;  // each written as smdebug/reductions/[abs_]<op>/<name>
  std::string histogram_tag;          // non-empty: TensorBoard histogram "<collection>/<name>"
  bool tensorboard_scalar = false;    // in a scalar collection (losses...): TensorBoard scalar
};

struct HookStats {
  // Steps with something to save, by fate: on disk (indexed, readable), lost to an I/O error,
  // dropped by the queue policy (drop_steps_when_full), or still queued for the I/O threads
  // (0 after Flush() or Close()). A hook that writes nothing (dry_run, other ranks) counts none.
  int64_t steps_saved = 0;
  int64_t steps_failed = 0;
  int64_t steps_dropped = 0;
  int64_t steps_pending = 0;
  int64_t tensors_saved = 0;  // raw values written
  int64_t reductions_saved = 0;
  uint64_t raw_bytes = 0;  // bytes of raw values handed to the writer
  // Capture failures reported (the first one printed); write failures count in steps_failed.
  int64_t errors = 0;
  int64_t plans_built = 0;  // cache misses of Plan()
  // Another training owns out_dir (its lock, docs/formats/run_lock.md): this hook saves
  // nothing, as writes() then says.
  bool out_dir_refused = false;
};

class Hook {
 public:
  // Validates the configuration (InvalidArgument saying what to change) and checks that
  // out_dir does not already hold a finished trial. Creates no file until something is saved.
  static Result<std::unique_ptr<Hook>> Create(HookConfig config);
  // LoadHookConfigFile(path) then Create. An empty path reads TRAINSCOPE_CONFIG, else
  // SMDEBUG_CONFIG_FILE_PATH.
  static Result<std::unique_ptr<Hook>> CreateFromJsonFile(const std::string& path = "");
  ~Hook();  // Close()s

  Hook(const Hook&) = delete;
  Hook& operator=(const Hook&) = delete;

  // The collections. Changes take effect at the next Step().
  CollectionManager& collections();
  const HookConfig& config() const;

  // Re-reads the collections: effective save/reduction configs (the hook's defaults fill what
  // a collection lacks), and checks every included collection. An included collection that is
  // not built in and has no regex and no tensor names (a typo in include_collections, a name
  // from smdebug's docs, or a collection the script defines only later) is skipped, not an
  // error: the training goes on, and the Step() that begins a step with it still empty prints
  // once to stderr (unless config.quiet)
  //   trainscope: collection '<name>' is not defined (did you mean '...'?); known: ... It is
  //   skipped: define it before the first step (...)
  // so a collection defined after Create() and before the first Step() (smdebug's pattern)
  // is saved without a word. InvalidArgument for more than 64 collections to save. Step()
  // calls it when needed.
  Status Prepare();

  // Names of the collections saved (after Prepare()), in creation order.
  std::vector<std::string> saved_collections() const;

  void SetMode(Mode m);
  Mode mode() const;
  int64_t step() const;       // global step; -1 before the first Step()
  int64_t mode_step() const;  // step of the current mode; -1 before its first step

  // Ends the current step and starts the next. Returns is_saving_step(). When a stop was
  // requested (see above) it closes the hook instead and returns false.
  bool Step();
  // Ends the current step now (queues its files for writing); idempotent.
  void EndStep();
  bool is_saving_step() const;

  // REQUIRES: a step has begun. A plan with save == false on steps that save nothing.
  const TensorPlan& Plan(std::string_view name);

  // Saves `v` as Plan(name) says (nothing if it says nothing). Raw values are copied.
  Status SaveTensor(std::string_view name, const TensorView& v);
  // As SaveTensor, but a raw value is borrowed, not copied: `keepalive` owns v's bytes, which
  // must not change until the writer drops it. REQUIRES: v is contiguous.
  Status SaveTensorNoCopy(std::string_view name, const TensorView& v,
                          std::shared_ptr<const void> keepalive);
  // For reductions computed elsewhere (on a GPU): writes the planned reductions from `stats`
  // and the planned shape; the raw value, if planned, must be saved with SaveTensor*.
  Status SaveStats(std::string_view name, const TensorStats& stats,
                   const std::vector<int64_t>& shape);
  // smdebug's save_scalar: "scalar/<name>" = [value] (float64, shape [1]) at the current step,
  // whatever the collections say; also a TensorBoard scalar when export is on. `wall_time_s`
  // (epoch seconds; 0: now) is the event's wall_time in both. Before the first Step() the
  // scalar waits and is written at step 0.
  Status SaveScalar(std::string_view name, double value, double wall_time_s = 0);
  // smdebug's save_tensor: `name` joins `collections` (created if needed) and, at a saving step
  // (any collection due), is saved as those collections' reduction configs say, whether or not
  // they are included or due themselves (smdebug's behaviour), plus what Plan(name) says.
  // Before the first Step() the value is copied and saved at step 0 (if it is a saving step),
  // as smdebug does; a name saved twice before then keeps its last value.
  Status SaveCustomTensor(std::string_view name, const TensorView& v,
                          const std::vector<std::string>& collections);

  // Records, for the current step, which loss tensors each closure evaluation of its optimizer
  // steps saved (the index's meta.closure_evaluations, docs/formats/index.md); replaces an
  // earlier record of the step. Nothing is recorded when the step saved nothing (no files).
  // Call it before the step ends (Step(), EndStep(), Close()).
  void SetClosureSteps(std::vector<ClosureStep> closures);

  // Counts one call of the model in the current step; the count goes into the step's index when
  // it ends (meta.model_calls, docs/formats/index.md: when 2 or more and the step saved
  // something) and starts again at 0 at each Step(). The automatic mode calls it for each forward
  // pass of a model it watches, the one that begins the step included. Any thread; lock-free.
  void CountModelCall() { model_calls_.fetch_add(1, std::memory_order_relaxed); }
  // The model calls counted in the current step so far.
  int64_t model_calls() const { return model_calls_.load(std::memory_order_relaxed); }
  // Bytes of the tensors this hook saved raw or reduced since it was made (a reduction computed
  // by the caller, SaveStats: its element count x 4): the capture's work on the training thread.
  // Its growth between two step boundaries is the work of that step (the framework timeline
  // marks a step whose capture copied or reduced kSavedStepBytes or more, "saved": true).
  uint64_t captured_bytes() const;
  static constexpr uint64_t kSavedStepBytes = uint64_t{64} * 1024;

  // Writes the collections file (once a step was saved) and waits until every ended step is
  // on disk, so a reader sees them; the step in progress is not ended. Returns first_error().
  Status Flush();

  // Reports a failure met outside the hook (converting a framework tensor, a frontend's own
  // callback) through the same channel as the hook's errors: printed once, then counted.
  // Returns `s`.
  Status ReportError(Status s, std::string_view tensor);

  // Ends the step, writes the collections file, drains the writer, writes the end marker (see
  // above). Idempotent. Returns the first error seen (also reported on stderr).
  Status Close();
  bool closed() const;

  // True once a Step() has seen the trial's stop file (the hook is then closed).
  bool StopRequested() const;
  // Why: the stop file's content (StopSignal::Read, stop_signal.h); an empty StopRequest while
  // StopRequested() is false.
  const StopRequest& stop_reason() const;

  // "worker_<rank>".
  const std::string& worker() const;
  int rank() const;
  int world_size() const;
  // False for a rank that writes nothing (include_workers = one, rank > 0) and in dry_run.
  bool writes() const;
  HookStats stats() const;
  Status first_error() const;

  // Step boundary for a scope: Step() on entry, EndStep() on exit.
  class StepScope {
   public:
    explicit StepScope(Hook& hook) : hook_(hook) { saving_ = hook_.Step(); }
    ~StepScope() { hook_.EndStep(); }
    StepScope(const StepScope&) = delete;
    StepScope& operator=(const StepScope&) = delete;
    bool saving() const { return saving_; }

   private:
    Hook& hook_;
    bool saving_;
  };

  class Impl;

 private:
  explicit Hook(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<int64_t> model_calls_{0};  // CountModelCall() since the last Step()
};

}  // namespace trainscope
