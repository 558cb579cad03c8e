#include "trainscope/hook.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <set>

#include "capture/planner.h"
#include "capture/workers.h"
#include "trainscope/out_dir_lock.h"
#include "trainscope/tensor_names.h"
#include "trainscope/tensorboard.h"
#include "trainscope/terminal_escape.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope {

class Hook::Impl {
 public:
  HookConfig config;
  Env* env = nullptr;
  capture::Planner planner;
  bool prepared = false;
  uint64_t prepared_version = 0;
  // The configuration changed since Prepare() (a collection of it did). Reads the collections
  // only when some collection of the process changed since the last look
  // (CollectionManager::MutationCount): a quiet step boundary touches none of them.
  uint64_t seen_mutations = 0;
  bool mutations_seen = false;
  bool CollectionsChanged() {
    const uint64_t m = CollectionManager::MutationCount();    // before version(): a change
    if (mutations_seen && m == seen_mutations) return false;  // after it is seen next time
    if (prepared_version != config.collections.version()) return true;
    seen_mutations = m;
    mutations_seen = true;
    return false;
  }
  std::string tensorboard_dir;  // empty: no TensorBoard export
  std::string worker;
  int rank = 0, world_size = 1;
  bool writes = false;
  // This writer's hold on out_dir (out_dir_lock.h); released at Close.
  std::unique_ptr<capture::OutDirLock> out_dir_lock;

  Mode mode = Mode::kGlobal;
  int64_t step = -1;
  std::array<int64_t, 4> mode_steps = {-1, -1, -1, -1};
  uint64_t due = 0;

  std::unique_ptr<TrialWriter> writer;
  std::unique_ptr<TensorBoardWriter> tensorboard;
  bool step_open = false;     // writer step begun for `step`
  bool step_pending = false;  // Step() called, EndStep() not yet
  bool saved_any_step = false;
  bool collections_exported = false;
  // Hook::captured_bytes(): read at step boundaries, maybe while a backward thread saves.
  std::atomic<uint64_t> captured_bytes{0};
  bool closed = false;
  struct EarlyScalar {
    std::string name;
    double value;
    double wall_time_s;
  };
  std::vector<EarlyScalar> early_scalars;  // saved before the first step, written at step 0
  struct EarlyCustom {
    std::string name;
    Tensor value;  // a copy
    std::vector<std::string> collections;
  };
  std::vector<EarlyCustom> early_custom;  // likewise, save_tensor's

  // The trial's stop files (stop_signal.h); none without out_dir: nothing to watch.
  std::optional<StopSignal> stop_signal;
  bool stop_requested = false;
  StopRequest stop_reason;  // empty until stop_requested
  bool stop_checked = false;
  uint64_t stop_checked_us = 0;  // when it was last checked (Env::NowMicros)

  // Whether this Step() looks for the stop file: the first time, then once
  // config.stop_check_interval_ms has passed since the last look (or the clock went back).
  bool StopCheckDue() {
    if (!stop_signal) return false;
    if (config.stop_check_interval_ms <= 0) return true;
    const uint64_t now = env->NowMicros();
    const auto interval_us = static_cast<uint64_t>(config.stop_check_interval_ms) * 1000;
    if (stop_checked && now >= stop_checked_us && now - stop_checked_us < interval_us) {
      return false;
    }
    stop_checked = true;
    stop_checked_us = now;
    return true;
  }

  // Step times (planner.h, "Short steps"), measured only when a collection asks for it: the
  // start of the step in progress and its mode; per mode the last kStepSamples durations.
  static constexpr size_t kStepSamples = 32;
  uint64_t step_start_us = 0;
  Mode step_start_mode = Mode::kGlobal;
  std::array<std::array<int64_t, kStepSamples>, 4> step_samples{};
  std::array<size_t, 4> step_sample_count{};

  // At a step boundary: the step that ends took now - step_start_us; every kStepSamples steps
  // of a mode the planner gets their median.
  void MeasureStep() {
    const uint64_t now = env->NowMicros();
    if (step_start_us != 0 && now > step_start_us && step >= 0) {
      const size_t m = static_cast<size_t>(step_start_mode) - 1;
      size_t& n = step_sample_count[m];
      step_samples[m][n % kStepSamples] = static_cast<int64_t>(now - step_start_us);
      if (++n % kStepSamples == 0) {
        auto v = step_samples[m];
        std::nth_element(v.begin(), v.begin() + kStepSamples / 2, v.end());
        planner.SetStepMicros(step_start_mode, v[kStepSamples / 2]);
      }
    }
    step_start_us = now;
    step_start_mode = mode;
  }

  HookStats stats;
  int64_t steps_ended = 0;  // steps handed to the writer
  Status first_error;
  std::set<std::string> warned_skipped;  // included collections already warned about

  // Warns once per name about included collections the planner skipped (they match nothing
  // at the step that begins now). Cheap when there are none.
  void WarnSkipped() {
    for (const auto& s : planner.skipped()) {
      if (!warned_skipped.insert(s.name).second || config.quiet) continue;
      std::fprintf(stderr, "trainscope: %s\n", s.message.c_str());
    }
  }

  int64_t current_mode_step() const { return mode_steps[static_cast<size_t>(mode) - 1]; }

  // Reports a failure once (fail open); later ones are counted.
  Status Report(Status s, std::string_view tensor) {
    if (s.ok()) return s;
    ++stats.errors;
    if (first_error.ok()) {
      first_error =
          s.WithContext("tensor '" + std::string(tensor) + "' at step " + std::to_string(step));
      if (!config.quiet) {
        std::fprintf(stderr,
                     "trainscope: could not save %s; training continues, later errors are only "
                     "counted\n",
                     first_error.ToString().c_str());
      }
    }
    return s;
  }
  // Report() where nobody takes the Status back (ends of steps, Close): first_error() has it.
  void Note(Status s, std::string_view what) { (void)Report(std::move(s), what); }

  Status EnsureWriter() {
    if (writer) return Status::OK();
    WriterOptions o;
    o.env = env;
    o.worker = worker;
    o.max_queue_bytes = config.max_queue_bytes;
    o.max_queue_steps = config.max_queue_steps;
    o.when_full = config.drop_steps_when_full ? WriterOptions::WhenFull::kDropStep
                                              : WriterOptions::WhenFull::kBlock;
    o.write_end_marker = false;  // the hook writes it once every worker is done
    o.quiet = config.quiet;
    TS_ASSIGN_OR_RETURN(writer, TrialWriter::Open(config.out_dir, o));
    return Status::OK();
  }

  // Begins the writer's step for the current step on first use.
  Status EnsureStep() {
    if (step_open) return Status::OK();
    TS_RETURN_IF_ERROR(EnsureWriter());
    TS_RETURN_IF_ERROR(writer->BeginStep(step, mode, current_mode_step()));
    step_open = true;
    return Status::OK();
  }

  Status EnsureTensorboard() {
    if (tensorboard) return Status::OK();
    TS_ASSIGN_OR_RETURN(tensorboard, TensorBoardWriter::Open(tensorboard_dir, env));
    return Status::OK();
  }

  Status WriteScalarValue(std::string_view name, const TensorView& v, double value,
                          double wall_time_s = 0) {
    if (!writes) return Status::OK();
    TS_RETURN_IF_ERROR(EnsureStep());
    TS_RETURN_IF_ERROR(writer->AddTensor(name, v, wall_time_s));
    if (!tensorboard_dir.empty()) {
      TS_RETURN_IF_ERROR(EnsureTensorboard());
      TS_RETURN_IF_ERROR(tensorboard->AddScalar(mode, name, step, value, wall_time_s));
    }
    return Status::OK();
  }

  Status WriteReductions(std::string_view name, const TensorPlan& p, const TensorStats& s) {
    for (const Reduction& r : p.reductions) {
      const double value = s.Value(r);
      ++stats.reductions_saved;
      if (!writes) continue;
      const std::string rname = ReductionTensorName(name, r);
      TS_RETURN_IF_ERROR(EnsureStep());
      TS_RETURN_IF_ERROR(writer->AddTensor(rname, TensorView::Scalar(DType::kF64, &value)));
      if (!tensorboard_dir.empty()) {
        TS_RETURN_IF_ERROR(EnsureTensorboard());
        TS_RETURN_IF_ERROR(tensorboard->AddScalar(mode, rname, step, value));
      }
    }
    return Status::OK();
  }

  Status Write(std::string_view name, const TensorPlan& p, const TensorView& v,
               std::shared_ptr<const void> keepalive) {
    if (v.num_elements() == 0) return Status::OK();  // smdebug skips empty tensors
    captured_bytes.fetch_add(v.nbytes(), std::memory_order_relaxed);
    if (p.save_shape && writes) {
      TS_RETURN_IF_ERROR(EnsureStep());
      TS_RETURN_IF_ERROR(writer->AddShape(name, v.shape));
    }
    if (!p.reductions.empty()) {
      TS_ASSIGN_OR_RETURN(TensorStats s, ComputeStats(v, StatsNeeds::For(p.reductions)));
      TS_RETURN_IF_ERROR(WriteReductions(name, p, s));
    }
    if (!p.histogram_tag.empty() && writes) {
      TS_ASSIGN_OR_RETURN(Histogram h, ComputeHistogram(v));
      TS_RETURN_IF_ERROR(EnsureTensorboard());
      TS_RETURN_IF_ERROR(tensorboard->AddHistogram(mode, p.histogram_tag, step, h));
    }
    if (p.save_raw) {
      ++stats.tensors_saved;
      stats.raw_bytes += v.nbytes();
      if (planner.stretches()) planner.NoteRawBytes(name, due, v.nbytes());
      if (writes) {
        TS_RETURN_IF_ERROR(EnsureStep());
        if (keepalive && v.is_contiguous()) {
          TS_RETURN_IF_ERROR(writer->AddTensorNoCopy(name, v, std::move(keepalive)));
        } else {
          TS_RETURN_IF_ERROR(writer->AddTensor(name, v));
        }
      }
    }
    if (p.tensorboard_scalar && writes && v.num_elements() == 1 && v.dtype != DType::kString) {
      TS_ASSIGN_OR_RETURN(double value, ComputeReduction(v, {ReductionOp::kSum, false}));
      TS_RETURN_IF_ERROR(EnsureTensorboard());
      TS_RETURN_IF_ERROR(tensorboard->AddScalar(mode, name, step, value));
    }
    return Status::OK();
  }

  Status ExportCollections() {
    const bool current = prepared && prepared_version == config.collections.version();
    planner.RecordSeenNames();
    // Recording the names seen is not a configuration change: no re-planning for it.
    if (current) prepared_version = config.collections.version();
    if (!writes) return Status::OK();
    TS_RETURN_IF_ERROR(EnsureWriter());
    const int num_workers = config.include_workers == IncludeWorkers::kAll ? world_size : 1;
    Status s = writer->WriteCollections(config.collections.ToJson(num_workers));
    if (!s.ok()) {
      AdoptWriterError(s);  // reported by the writer; tried again at the next step
      return Status::OK();
    }
    collections_exported = true;
    return Status::OK();
  }

  // An I/O error of the writer: the writer printed it once already (path and errno) and counts
  // the steps it lost; the hook keeps it as its first error without printing it again.
  void AdoptWriterError(const Status& s) {
    if (!s.ok() && first_error.ok()) first_error = s;
  }

  void EndStep() {
    if (!step_pending) return;
    step_pending = false;
    if (step_open) {
      step_open = false;
      ++steps_ended;
      saved_any_step = true;
      Note(writer->EndStep(), "(end of step)");
    }
  }
};

Hook::Hook(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Hook::~Hook() { (void)Close(); }  // an error was reported on stderr and is in first_error()

Result<std::unique_ptr<Hook>> Hook::Create(HookConfig config) {
  TS_RETURN_IF_ERROR(config.Validate());
  auto impl = std::make_unique<Impl>();
  impl->env = config.env ? config.env : Env::Default();
  if (config.out_dir.empty() && !config.dry_run) {
    return Status::InvalidArgument(
        "out_dir is empty: give the hook the folder to write the trial "
        "to (a new folder, or one without training_job_end.ts)");
  }
  TS_ASSIGN_OR_RETURN(auto id, capture::ResolveWorker(config.rank, config.world_size));
  impl->rank = id.rank;
  impl->world_size = id.world_size;
  impl->worker = capture::WorkerName(id.rank);
  impl->writes =
      !config.dry_run && (config.include_workers == IncludeWorkers::kAll || impl->rank == 0);
  if (impl->writes &&
      impl->env->FileExists(JoinPath(config.out_dir, trial_format::kEndOfJobFile))) {
    return Status::InvalidArgument("out_dir " + config.out_dir +
                                   " already holds a finished trial (it has " +
                                   std::string(trial_format::kEndOfJobFile) +
                                   "): choose a new out_dir, or delete the old trial first");
  }
  // One training writes an out_dir at a time: another writer's hold refuses this hook, which
  // then saves nothing and says so once (fail open: the training goes on).
  if (impl->writes && !config.out_dir.empty()) {
    auto lock =
        capture::OutDirLock::Acquire(config.out_dir, impl->worker, impl->world_size, impl->env);
    if (lock.ok()) {
      impl->out_dir_lock = std::move(*lock);
    } else if (lock.status().code() == StatusCode::kUnavailable) {
      impl->writes = false;
      impl->stats.out_dir_refused = true;
      std::fprintf(stderr, "trainscope: %s\n", lock.status().message().c_str());
    } else if (!config.quiet) {
      std::fprintf(stderr, "trainscope: %s; writing without the out_dir lock\n",
                   lock.status().message().c_str());
    }
  }
  if (!config.tensorboard_dir.empty()) {
    impl->tensorboard_dir = config.tensorboard_dir;
  } else if (config.export_tensorboard) {
    impl->tensorboard_dir = JoinPath(config.out_dir, trial_format::kTensorboardDir);
  }
  if (!config.include_regex.empty()) {
    auto def = config.collections.GetOrCreate(collection_keys::kDefault);
    for (const auto& re : config.include_regex) TS_RETURN_IF_ERROR(def->Include(re));
  }
  if (config.save_all) {
    auto all = config.collections.GetOrCreate(collection_keys::kAll);
    if (std::find(all->include_regex().begin(), all->include_regex().end(), ".*") ==
        all->include_regex().end()) {
      TS_RETURN_IF_ERROR(all->Include(".*"));
    }
  }
  if (!config.quiet) {
    for (const auto& w : config.warnings) std::fprintf(stderr, "trainscope: %s\n", w.c_str());
  }
  // Reads SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE now, once.
  if (!config.out_dir.empty()) impl->stop_signal.emplace(config.out_dir, impl->env);
  impl->config = std::move(config);
  return std::unique_ptr<Hook>(new Hook(std::move(impl)));
}

Result<std::unique_ptr<Hook>> Hook::CreateFromJsonFile(const std::string& path) {
  TS_ASSIGN_OR_RETURN(HookConfig config, LoadHookConfigFile(path));
  TS_ASSIGN_OR_RETURN(auto hook, Create(std::move(config)));
  // A JSON configuration is complete: check its collections now, not at the first step.
  TS_RETURN_IF_ERROR(hook->Prepare());
  return hook;
}

CollectionManager& Hook::collections() { return impl_->config.collections; }
const HookConfig& Hook::config() const { return impl_->config; }

Status Hook::Prepare() {
  Impl& d = *impl_;
  TS_RETURN_IF_ERROR(d.planner.Prepare(d.config.collections, d.config, !d.tensorboard_dir.empty()));
  d.prepared = true;
  d.prepared_version = d.config.collections.version();
  if (d.step >= 0) d.due = d.planner.DueMask(d.mode, d.current_mode_step());
  return Status::OK();
}

std::vector<std::string> Hook::saved_collections() const {
  return impl_->planner.SavedCollectionNames();
}

void Hook::SetMode(Mode m) { impl_->mode = m; }
Mode Hook::mode() const { return impl_->mode; }
int64_t Hook::step() const { return impl_->step; }
int64_t Hook::mode_step() const { return impl_->current_mode_step(); }
bool Hook::is_saving_step() const { return impl_->due != 0; }

bool Hook::Step() {
  Impl& d = *impl_;
  if (d.closed) return false;
  if (d.StopCheckDue() && d.stop_signal->Check()) {
    Result<StopRequest> reason = d.stop_signal->Read();
    if (reason.ok()) {
      d.stop_reason = std::move(reason).value();
    } else {  // gone between the check and the read (Clear): it was there, so stop all the same
      d.stop_reason = StopRequest{};
      d.stop_reason.source = "unknown";
      d.stop_reason.explanation = "stop file present (no reason given)";
    }
    d.stop_requested = true;
    (void)Close();  // its error is reported and stays in first_error(); a later Close() returns it
    // The explanation comes from a rule's file: escaped, so it cannot drive the terminal.
    std::fprintf(stderr, "trainscope: training stopped on request of %s\n",
                 EscapeForTerminal(d.stop_reason.ToString()).c_str());
    return false;
  }
  EndStep();
  if (d.due != 0 && d.prepared && d.planner.stretches()) d.planner.EndSavingStep(d.due);
  model_calls_.store(0, std::memory_order_relaxed);
  if (d.saved_any_step && !d.collections_exported) d.Note(d.ExportCollections(), "(collections)");
  if (!d.prepared || d.CollectionsChanged()) {
    Status s = Prepare();
    if (!s.ok()) {
      d.Note(s, "(configuration)");
      d.due = 0;
    }
  }
  if (d.prepared) d.WarnSkipped();
  if (d.prepared && d.planner.stretches()) d.MeasureStep();
  ++d.step;
  ++d.mode_steps[static_cast<size_t>(d.mode) - 1];
  if (d.mode != Mode::kGlobal) d.mode_steps[static_cast<size_t>(Mode::kGlobal) - 1] = d.step;
  d.step_pending = true;
  d.due = d.prepared ? d.planner.DueMask(d.mode, d.current_mode_step()) : 0;
  if (!d.early_scalars.empty()) {
    auto early = std::move(d.early_scalars);
    d.early_scalars.clear();
    // Saves fail open: each failure is reported (stderr once, then first_error()).
    for (const auto& s : early) (void)SaveScalar(s.name, s.value, s.wall_time_s);
  }
  if (!d.early_custom.empty()) {
    auto early = std::move(d.early_custom);
    d.early_custom.clear();
    for (const auto& c : early) (void)SaveCustomTensor(c.name, c.value.view(), c.collections);
  }
  return d.due != 0;
}

void Hook::EndStep() {
  Impl& d = *impl_;
  // The step's model calls go into its index (meta.model_calls) before the index is written.
  const int64_t calls = model_calls_.load(std::memory_order_relaxed);
  if (calls >= 2 && d.step_pending && d.step_open && !d.closed) {
    d.Note(d.writer->SetModelCalls(calls), "(model calls)");
  }
  d.EndStep();
}

void Hook::SetClosureSteps(std::vector<ClosureStep> closures) {
  Impl& d = *impl_;
  if (d.closed || !d.step_open) return;  // the step saved nothing: no index to record it in
  d.Note(d.writer->SetClosureSteps(std::move(closures)), "(closure evaluations)");
}

const TensorPlan& Hook::Plan(std::string_view name) {
  return impl_->planner.Plan(name, impl_->due);
}

Status Hook::SaveTensor(std::string_view name, const TensorView& v) {
  return SaveTensorNoCopy(name, v, nullptr);
}

Status Hook::SaveTensorNoCopy(std::string_view name, const TensorView& v,
                              std::shared_ptr<const void> keepalive) {
  Impl& d = *impl_;
  if (d.due == 0 || d.closed) return Status::OK();
  const TensorPlan& p = d.planner.Plan(name, d.due);
  if (!p.save) return Status::OK();
  return d.Report(d.Write(name, p, v, std::move(keepalive)), name);
}

Status Hook::SaveStats(std::string_view name, const TensorStats& stats,
                       const std::vector<int64_t>& shape) {
  Impl& d = *impl_;
  if (d.due == 0 || d.closed) return Status::OK();
  const TensorPlan& p = d.planner.Plan(name, d.due);
  if (!p.save || stats.count == 0) return Status::OK();
  Status s;
  if (p.save_shape && d.writes) {
    s = d.EnsureStep();
    if (s.ok()) s = d.writer->AddShape(name, shape);
  }
  if (s.ok()) s = d.WriteReductions(name, p, stats);
  d.captured_bytes.fetch_add(static_cast<uint64_t>(stats.count) * 4, std::memory_order_relaxed);
  return d.Report(s, name);
}

Status Hook::SaveScalar(std::string_view name, double value, double wall_time_s) {
  Impl& d = *impl_;
  if (d.closed) return Status::OK();
  if (d.step < 0) {
    d.early_scalars.push_back({std::string(name), value, wall_time_s});
    return Status::OK();
  }
  const std::string full = tensor_names::ScalarName(name);
  const int64_t one = 1;
  TensorView v{DType::kF64, &value, {one}, {}, {}};
  return d.Report(d.WriteScalarValue(full, v, value, wall_time_s), full);
}

Status Hook::SaveCustomTensor(std::string_view name, const TensorView& v,
                              const std::vector<std::string>& collections) {
  Impl& d = *impl_;
  std::vector<std::shared_ptr<Collection>> colls;
  for (const auto& c : collections) {
    auto coll = d.config.collections.GetOrCreate(c);
    if (coll->tensor_names().count(std::string(name)) == 0) coll->AddTensorName(std::string(name));
    colls.push_back(std::move(coll));
  }
  if (d.closed) return Status::OK();
  if (d.step < 0) {  // before the first step: written at step 0, as smdebug does
    auto same = std::find_if(d.early_custom.begin(), d.early_custom.end(),
                             [&](const Impl::EarlyCustom& c) { return c.name == name; });
    if (same != d.early_custom.end()) d.early_custom.erase(same);
    d.early_custom.push_back({std::string(name), Tensor::CopyOf(v), collections});
    return Status::OK();
  }
  // As smdebug: written at a saving step, as its own collections say, due or not.
  if (d.due == 0 || !d.prepared) return Status::OK();
  const TensorPlan p = d.planner.PlanWith(name, d.due, colls, d.config.reduction_config);
  if (!p.save) return Status::OK();
  return d.Report(d.Write(name, p, v, nullptr), name);
}

Status Hook::Flush() {
  Impl& d = *impl_;
  if (d.closed || !d.writes) return d.first_error;
  if (d.saved_any_step || d.step_open) d.Note(d.ExportCollections(), "(collections)");
  if (d.writer) d.AdoptWriterError(d.writer->Flush());
  return d.first_error;
}

Status Hook::ReportError(Status s, std::string_view tensor) {
  return impl_->Report(std::move(s), tensor);
}

Status Hook::Close() {
  Impl& d = *impl_;
  if (d.closed) return d.first_error;
  EndStep();
  d.closed = true;
  d.due = 0;
  if (!d.writes) return d.first_error;
  d.Note(d.ExportCollections(), "(collections)");
  if (d.tensorboard) d.Note(d.tensorboard->Close(), "(tensorboard)");
  // The writer records lost steps in the trial (incomplete_<worker>.json) and says so; the job
  // still ended, so the end marker follows (readers must not wait for ever).
  if (d.writer) d.AdoptWriterError(d.writer->Close());
  const int num_workers = d.config.include_workers == IncludeWorkers::kAll ? d.world_size : 1;
  auto marked = capture::MarkDoneAndMaybeEnd(d.env, d.config.out_dir, d.worker, num_workers);
  if (!marked.ok()) d.Note(marked.status(), "(end marker)");
  d.out_dir_lock.reset();  // the trial is finished: the folder is free
  return d.first_error;
}

bool Hook::closed() const { return impl_->closed; }
bool Hook::StopRequested() const { return impl_->stop_requested; }
const StopRequest& Hook::stop_reason() const { return impl_->stop_reason; }
const std::string& Hook::worker() const { return impl_->worker; }
int Hook::rank() const { return impl_->rank; }
int Hook::world_size() const { return impl_->world_size; }
bool Hook::writes() const { return impl_->writes; }

uint64_t Hook::captured_bytes() const {
  return impl_->captured_bytes.load(std::memory_order_relaxed);
}

HookStats Hook::stats() const {
  const Impl& d = *impl_;
  HookStats s = d.stats;
  s.plans_built = d.planner.plans_built();
  if (d.writer) {
    const WriterStats w = d.writer->stats();
    s.steps_saved = w.steps_written;
    s.steps_failed = w.steps_failed;
    s.steps_dropped = w.steps_dropped;
    s.steps_pending =
        std::max<int64_t>(0, d.steps_ended - w.steps_written - w.steps_failed - w.steps_dropped);
  }
  return s;
}

Status Hook::first_error() const { return impl_->first_error; }

}  // namespace trainscope
