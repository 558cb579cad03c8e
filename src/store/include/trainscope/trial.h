// Trial: reads a trial folder written by trainscope or by smdebug, while it is being written.
//
// Semantics follow smdebug's reader (docs/formats/trial.md, "Reading"): steps are global steps
// unless a mode is given (then mode steps); a step is complete when all num_workers workers wrote
// it, or the job ended, or it is at most last_complete_step; the incomplete-step window moves
// last_complete_step forward when too many steps wait. Fixed on purpose: a saved shape never hides
// a saved value; every dtype decodes correctly (int8 is int8).
//
// Following: Refresh() reads only index files it has not read before. With inotify (Linux) it
// learns of new files from the kernel and does not list folders again; elsewhere it lists only the
// newest index folders. Most queries call MaybeRefresh() first (at most one refresh per
// `refresh_interval`), as smdebug's maybe_refresh does, unless the trial has loaded all steps.
//
// Values: Value() returns a Tensor whose bytes point into a memory map of the event file (no
// copy) when the record is well-formed; the record's length CRC is always checked, its payload
// CRC32C is checked against the index entry's "crc32c" key when present (trainscope trials).
//
// Errors: NotFound (no such tensor/step/worker), Unavailable (not yet written), OutOfRange (the
// job ended before the step), Corruption (names the file and byte offset).
//
// smdebug's exceptions. Where smdebug raises one of its exceptions, the Status carries the
// matching ErrorDetail (status.h) and its ErrorSubject (tensor, step as queried, mode, and
// has_reductions / last_step / worker where the exception has them); the bindings raise the class
// from the detail. The message starts with the exception's name ("<ExceptionName>: ") for people
// reading it; nothing parses it.
//   smdebug exception          StatusCode        ErrorDetail
//   TensorUnavailable          kNotFound         kTensorUnavailable
//   TensorUnavailableForStep   kNotFound         kTensorUnavailableForStep (has_reductions)
//   StepUnavailable            kNotFound         kStepUnavailable
//   StepNotYetAvailable        kUnavailable      kStepNotYetAvailable
//   NoMoreData                 kOutOfRange       kNoMoreData (last_step)
//   ShapeUnavailableForStep    kNotFound         kShapeUnavailableForStep
//   InvalidWorker              kInvalidArgument  kInvalidWorker (worker)
//   MissingCollectionFiles     kNotFound         kMissingCollectionFiles (Open/OpenWhenReady)
// Other codes have no smdebug counterpart: Corruption (a damaged index or event file: smdebug
// raised assorted errors), IOError, InvalidArgument without a detail (a bad regex, both regex
// and collection given: smdebug's ValueError), NotFound without a detail (unknown collection:
// smdebug's KeyError; a missing event file). Value/ReductionValue/Shape/SavedReductions/
// TensorWorkers raise as smdebug's Tensor._step does: tensor never seen -> TensorUnavailable;
// step known but tensor absent -> TensorUnavailableForStep; otherwise by HasPassedStep:
// kUnavailable -> StepUnavailable, kNotYetAvailable -> NoMoreData once all steps are loaded,
// else StepNotYetAvailable.
//
// Deliberate differences from smdebug (each is a fix):
// - the incomplete-step window counts pending steps (smdebug counts all steps and compares with
//   last_complete_step + 1, right only for dense steps) and repeats its half-window jump until
//   at most `incomplete_step_window` steps wait (smdebug jumps once per refresh);
// - index files that arrive late for steps at or below last_complete_step are still read
//   (smdebug's listing resumes after last_complete_step and drops them);
// - values are keyed by global step (smdebug keys a tensor's steps by mode step);
// - Tensor steps use global-step completeness for every mode (smdebug compared mode steps with
//   last_complete_step).
//
// Thread safety: all methods are thread-safe. Queries hold an internal mutex only briefly;
// reading index files and decoding values run outside it, and a thread blocked in
// WaitForChange does not hold up other threads' queries.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/modes.h"
#include "trainscope/reductions.h"
#include "trainscope/status.h"
#include "trainscope/tensor.h"

namespace trainscope {

// smdebug's StepState.
enum class StepState { kUnavailable = 0, kAvailable = 1, kNotYetAvailable = 2 };

struct TrialOptions {
  Env* env = nullptr;  // nullptr = Env::Default()
  // Only index files of global steps in [range_begin, range_end) are read (end -1 = unbounded).
  int64_t range_begin = 0;
  int64_t range_end = -1;
  // smdebug's SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW.
  int64_t incomplete_step_window = 1000;
  // Minimum time between two automatic refreshes (0 = refresh on every query).
  std::chrono::milliseconds refresh_interval{0};
  // After the end marker is seen: refresh once more this long after it was written before
  // declaring all steps loaded (smdebug's SMDEBUG_TRAINING_END_DELAY_REFRESH, 1 s there, which
  // smdebug waits from the moment it sees the marker: opening a finished trial waits nothing
  // here).
  std::chrono::milliseconds end_delay{100};
  bool use_inotify = true;
  // Verify the payload CRC32C of every value read when the index has one.
  bool verify_checksums = true;
};

// One collection as written in a collections file.
struct CollectionInfo {
  std::string name;
  std::vector<std::string> include_regex;
  std::vector<std::string> tensor_names;
  std::string reduction_config_json;  // "null" when absent
  std::string save_config_json;       // "null" when absent
  bool save_histogram = true;
};

// A module of the model as the hook saw it run (the collections file's _meta.modules,
// trial.md): its name in the trial's tensor names ("encoder.1" saves "encoder.1_input_0") and
// its class name ("ReLU").
struct ModuleInfo {
  std::string name;
  std::string type;
};

// One optimizer step given a closure (`optimizer.step(closure)`: LBFGS calls it up to max_iter
// times), as the hook recorded it in its step's index (docs/formats/index.md,
// meta.closure_evaluations): the loss tensors each call of the closure saved, in call order.
struct ClosureStep {
  std::string optimizer;                              // its class name ("LBFGS")
  std::vector<std::vector<std::string>> evaluations;  // per call: loss tensor names, saved order
  bool operator==(const ClosureStep&) const = default;
};

// One worker's incomplete marker, <trial>/incomplete_<worker>.json (docs/formats/trial.md,
// "Incomplete marker"): that worker lost steps. `readable` is false when the file is empty (the
// disk had no room for its content) or its content cannot be read (`problem` says why); the
// marker still means the worker lost steps, and the counts are then -1.
struct IncompleteMarker {
  std::string worker;  // from the file name
  std::string path;    // the marker file
  bool readable = false;
  std::string problem;  // why the content is not readable; empty when readable
  bool final = false;   // written by close(): the counts are final
  int64_t steps_written = -1;
  int64_t steps_failed = -1;
  int64_t steps_dropped = -1;
  int64_t first_lost_step = -1;  // -1: unknown
  std::string first_error;       // the first I/O error (path and errno text); empty if none
};

// The incomplete markers of the trial folder `trial_dir`, sorted by worker; empty when no worker
// lost steps. Each marker is read bounded (at most 64 KiB, regular files only: a symlink, FIFO
// or device is refused without being opened for reading, and is reported as an unreadable
// marker). Errors: IOError when the folder cannot be listed.
Result<std::vector<IncompleteMarker>> ReadIncompleteMarkers(const std::string& trial_dir);

class Trial {
 public:
  // Opens a trial. Unavailable if no collections file exists yet (the caller decides whether to
  // wait: see WaitForCollections); NotFound if `path` does not exist.
  static Result<std::unique_ptr<Trial>> Open(const std::string& path, TrialOptions options = {});
  // Polls (every `poll`) for the folder and the collections files of every worker until they
  // exist, the end marker appears without them (NotFound, "MissingCollectionFiles: no debugging
  // data was saved ..."), or `timeout` passes (Unavailable), as smdebug's create_trial waits.
  static Result<std::unique_ptr<Trial>> OpenWhenReady(
      const std::string& path, TrialOptions options = {},
      std::chrono::milliseconds timeout = std::chrono::hours(24 * 365),
      std::chrono::milliseconds poll = std::chrono::milliseconds(100));
  ~Trial();

  const std::string& path() const;
  std::string name() const;  // basename of the path

  // Reads index files not read yet. Cheap when nothing changed. Once the end marker is seen it
  // waits until end_delay has passed since the marker was written, reads once more and sets
  // loaded_all_steps (smdebug's final refresh).
  // A damaged index file is reported once (Corruption naming it; "N more failed" counts the
  // others) and then skipped for good; every readable file is still loaded. Queries that
  // refresh implicitly ignore such errors (they answer with what could be read).
  Status Refresh();
  // Refresh() unless all steps are loaded or the last refresh is younger than refresh_interval.
  Status MaybeRefresh();
  // Returns as soon as a refresh loaded something new (index files, or the end of the job:
  // loaded_all_steps), or when `timeout` passes, or at once if all steps are loaded. Blocks on
  // inotify when it can (a new step shows within milliseconds), else lists the newest index
  // folders every 20 ms. Other threads' queries are not blocked meanwhile. OK on timeout; an
  // error only when a refresh failed (see Refresh).
  Status WaitForChange(std::chrono::milliseconds timeout);

  // Workers, sorted, from the collections files.
  std::vector<std::string> workers() const;
  int num_workers() const;
  std::vector<CollectionInfo> collections() const;
  std::optional<CollectionInfo> collection(const std::string& name) const;
  // Whether the hook registered `tensor_name` as a trainable parameter (requires_grad: true) or
  // a frozen one (false), from the collections file's _meta.parameters (trial.md); nullopt when
  // the trial does not say (not a parameter, or a trial written by smdebug or an older
  // trainscope).
  std::optional<bool> ParameterTrainable(const std::string& tensor_name) const;
  // True when the trial records its parameters (ParameterTrainable is known for every one).
  bool records_parameters() const;
  // The registered modules in the order their forward calls finished in the first step that ran
  // them (leaf modules in execution order, containers after their contents), from _meta.modules
  // (trial.md); empty when the trial does not say (smdebug, C++ hooks).
  const std::vector<ModuleInfo>& modules() const;
  // The reinforcement-learning environment or agent libraries the training had imported
  // ("gymnasium"...), from _meta.environments (trial.md); empty when none, or when the trial does
  // not say (smdebug, C++ hooks).
  const std::vector<std::string>& environments() const;

  // Sorted tensor names. `step` is a step of `mode` (nullopt = any step). Reduction tensors
  // ("smdebug/reductions/...") are folded onto their base tensor and not listed themselves.
  // regex: ECMAScript, matched with search (substring) semantics like re.search.
  // collection: names in the collection's tensor_names or matching one of its include_regex.
  Result<std::vector<std::string>> TensorNames(Mode mode = Mode::kGlobal,
                                               std::optional<int64_t> step = std::nullopt,
                                               const std::string& regex = "",
                                               const std::string& collection = "");
  bool HasTensor(const std::string& name);

  // Sorted complete steps of `mode` (mode steps unless kGlobal).
  std::vector<int64_t> Steps(Mode mode = Mode::kGlobal, bool show_incomplete = false);
  std::vector<Mode> Modes();
  Result<Mode> ModeOf(int64_t global_step);
  Result<int64_t> ModeStep(int64_t global_step);
  Result<int64_t> GlobalStep(Mode mode, int64_t mode_step);

  StepState HasPassedStep(int64_t step, Mode mode = Mode::kGlobal);
  bool loaded_all_steps() const;
  bool training_ended();               // the end marker exists
  int64_t last_complete_step() const;  // global; -1 if none

  // Steps at which `tensor` exists (complete ones unless show_incomplete).
  Result<std::vector<int64_t>> TensorSteps(const std::string& tensor, Mode mode = Mode::kGlobal,
                                           bool show_incomplete = false);
  // Workers that saved `tensor` at `step` (sorted).
  Result<std::vector<std::string>> TensorWorkers(const std::string& tensor, int64_t step,
                                                 Mode mode = Mode::kGlobal);

  // The raw value. worker "" = the lexicographically first worker that has it.
  // Errors: NotFound if the tensor was never seen; for a step without the value: NotFound
  // whose message says whether reductions exist (smdebug's TensorUnavailableForStep), or
  // Unavailable / OutOfRange by HasPassedStep as smdebug's _step does.
  Result<Tensor> Value(const std::string& tensor, int64_t step, Mode mode = Mode::kGlobal,
                       const std::string& worker = "");
  // A saved reduction if one was saved, else computed from the raw value (same definition).
  Result<double> ReductionValue(const std::string& tensor, int64_t step, Reduction r,
                                Mode mode = Mode::kGlobal, const std::string& worker = "");
  // Saved reductions only.
  Result<std::vector<std::pair<Reduction, double>>> SavedReductions(const std::string& tensor,
                                                                    int64_t step,
                                                                    Mode mode = Mode::kGlobal,
                                                                    const std::string& worker = "");
  // The closure evaluations recorded at global step `step` (index meta.closure_evaluations), by
  // `worker` ("" = the first worker by name that recorded any there); empty when the step has
  // none (no optimizer step with a closure called twice or more, a trial written by smdebug or
  // an older trainscope, a step not loaded yet).
  std::vector<ClosureStep> ClosureSteps(int64_t step, const std::string& worker = "");
  // The calls of the model in global step `step` as the automatic mode counted them (index
  // meta.model_calls: 2 or more), by `worker` ("" = the first worker by name that recorded them
  // there); 0 when not recorded (one call, a trial written by smdebug, a script's own hook or an
  // older trainscope, a step not loaded yet).
  int64_t ModelCalls(int64_t step, const std::string& worker = "");

  // Saved shape, else the raw value's shape.
  Result<std::vector<int64_t>> Shape(const std::string& tensor, int64_t step,
                                     Mode mode = Mode::kGlobal, const std::string& worker = "");

  // The trial's incomplete markers (ReadIncompleteMarkers of path(), read afresh each call):
  // non-empty when a worker lost steps (a full disk, an I/O error, steps dropped by the queue
  // policy), so the trial is incomplete even where every saved step reads fine.
  Result<std::vector<IncompleteMarker>> Incomplete() const;

  // The index files found damaged so far (each once, in the order found, at most 1000), each as
  // the Corruption message that names the file and what is wrong. Their steps are not in the
  // trial (a query that refreshes implicitly answers without them): readers that do not call
  // Refresh() themselves check here to say so. Thread-safe.
  std::vector<std::string> DamagedIndexFiles() const;

  class Impl;

 private:
  explicit Trial(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainscope
