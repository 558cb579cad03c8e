// TrialWriter (include/trainscope/writer.h): encoding on the caller's thread, I/O on background
// threads fed by a queue bounded in bytes; event files are written in parallel, index files are
// published in step order.
#include "trainscope/writer.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "store/index_file.h"
#include "store/journal.h"
#include "store/step_buffer.h"
#include "trainscope/helper_pool.h"
#include "trainscope/thread_annotations.h"
#include "trainscope/trial_format.h"

namespace trainscope {

// In journal.cc: IOError naming the first component of `path` below the trial folder `root`
// that is a symbolic link (the writer never writes through one: it may lead out of the trial).
Status CheckNoLinkBelow(const std::string& root, const std::string& path);

class TrialWriter::Impl {
 public:
  Impl(std::string dir, WriterOptions options)
      : dir_(std::move(dir)),
        options_(std::move(options)),
        env_(options_.env),
        pool_(options_.max_queue_bytes) {}

  ~Impl() {
    // An error is in first_error() and was reported on stderr; an exception here (out of memory
    // in Close) must not end the training from a destructor.
    try {
      (void)Close();
    } catch (...) {
    }
  }

  // Opens the journal (docs/formats/journal.md) where it can be used; recovers what a dead
  // writer of this worker left. Aborted when a live writer of this worker holds it.
  Status OpenJournal() {
    const char* env = std::getenv("TRAINSCOPE_JOURNAL");
    bool on = options_.journal;
    if (env != nullptr && std::string(env) == "0") on = false;
    if (env != nullptr && std::string(env) == "1") on = true;
    if (!on || env_ != Env::Default()) return Status::OK();
    auto j = Journal::Open(dir_, options_.worker, &recovery_);
    if (j.ok()) {
      journal_ = std::move(*j);
      if (!options_.quiet && (recovery_.steps_recovered > 0 || recovery_.steps_lost > 0)) {
        std::fprintf(stderr,
                     "trainscope: %s: published %lld step(s) that an earlier writer of %s had "
                     "handed over before it died (%lld damaged, see incomplete_%s.json)\n",
                     dir_.c_str(), static_cast<long long>(recovery_.steps_recovered),
                     options_.worker.c_str(), static_cast<long long>(recovery_.steps_lost),
                     options_.worker.c_str());
      }
      return Status::OK();
    }
    if (j.status().code() == StatusCode::kAborted) return j.status();
    if (!options_.quiet) {
      std::fprintf(stderr,
                   "trainscope: the trial %s has no SIGKILL-proof journal (%s); steps wait in "
                   "memory, and a killed training loses up to %lld of those handed over\n",
                   dir_.c_str(), j.status().ToString().c_str(),
                   static_cast<long long>(options_.max_queue_steps));
    }
    return Status::OK();
  }

  void Start() {
    int n = options_.io_threads;
    if (n <= 0) n = std::min(2, internal::HelperPool::Shared().threads());
    n = std::clamp(n, 1, 16);
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Run(); });
  }

  // ----- training thread

  Status BeginStep(int64_t global_step, Mode mode, int64_t mode_step) {
    if (closed_) return Status::Aborted("TrialWriter for " + dir_ + " is closed");
    if (step_) {
      return Status::InvalidArgument("BeginStep(" + std::to_string(global_step) + ") while step " +
                                     std::to_string(step_->step()) +
                                     " is open; call EndStep() first");
    }
    if (last_step_ && global_step <= *last_step_) {
      return Status::InvalidArgument("BeginStep(" + std::to_string(global_step) + ") after step " +
                                     std::to_string(*last_step_) + "; global steps must increase");
    }
    last_step_ = global_step;
    step_ = journal_ ? std::make_unique<StepBuffer>(global_step, mode, mode_step, journal_.get(),
                                                    reserve_hint_.load(std::memory_order_relaxed))
                     : std::make_unique<StepBuffer>(global_step, mode, mode_step, &pool_);
    // Already over the limit: drop now, before copying anything.
    dropping_ = false;
    dropped_any_ = false;
    if (options_.when_full == WriterOptions::WhenFull::kDropStep) {
      MutexLock l(&mu_);
      dropping_ = !Accepts(1);
    }
    return Status::OK();
  }

  Status CheckTensor(std::string_view name, const TensorView& v) const {
    if (!step_) {
      return Status::InvalidArgument("tensor \"" + std::string(name) +
                                     "\" added with no step open; call BeginStep() first");
    }
    if (name.empty() || !IsValidUtf8(name)) {
      return Status::InvalidArgument("tensor name \"" + std::string(name) +
                                     "\" is empty or not valid UTF-8");
    }
    if (v.dtype == DType::kInvalid) {
      return Status::InvalidArgument("tensor \"" + std::string(name) + "\" has no dtype");
    }
    for (int64_t d : v.shape) {
      if (d < 0) {
        return Status::InvalidArgument("tensor \"" + std::string(name) + "\" has shape " +
                                       ShapeToString(v.shape) + " with a negative dimension");
      }
    }
    if (!v.strides.empty() && v.strides.size() != v.shape.size()) {
      return Status::InvalidArgument("tensor \"" + std::string(name) + "\" has " +
                                     std::to_string(v.strides.size()) + " strides for " +
                                     std::to_string(v.shape.size()) + " dimensions");
    }
    if (v.dtype == DType::kString) {
      if (v.shape.size() != 1 || static_cast<int64_t>(v.strings.size()) != v.shape[0]) {
        return Status::InvalidArgument("string tensor \"" + std::string(name) +
                                       "\" must be 1-D with one string per element "
                                       "(shape " +
                                       ShapeToString(v.shape) + ", " +
                                       std::to_string(v.strings.size()) + " strings)");
      }
    } else if (v.data == nullptr && v.num_elements() > 0) {
      return Status::InvalidArgument("tensor \"" + std::string(name) + "\" has no data");
    }
    return Status::OK();
  }

  Status AddTensor(std::string_view name, const TensorView& v, bool borrow,
                   std::shared_ptr<const void> keepalive, double wall_time_s = 0) {
    TS_RETURN_IF_ERROR(CheckTensor(name, v));
    if (dropping_) {
      dropped_any_ = true;
      return Status::OK();
    }
    const bool can_borrow = borrow && v.dtype != DType::kString && v.is_contiguous();
    const double wall_time =
        wall_time_s > 0 ? wall_time_s : static_cast<double>(env_->NowMicros()) * 1e-6;
    step_->AddTensor(name, v, wall_time, can_borrow, can_borrow ? std::move(keepalive) : nullptr);
    return Status::OK();
  }

  Status AddShape(std::string_view name, const std::vector<int64_t>& shape) {
    if (!step_) return Status::InvalidArgument("AddShape with no step open");
    if (name.empty() || !IsValidUtf8(name)) {
      return Status::InvalidArgument("tensor name \"" + std::string(name) +
                                     "\" is empty or not valid UTF-8");
    }
    if (dropping_) {
      dropped_any_ = true;
    } else {
      step_->AddShape(name, shape);
    }
    return Status::OK();
  }

  Status EndStep() {
    if (!step_) return Status::InvalidArgument("EndStep with no step open");
    std::unique_ptr<StepBuffer> step = std::move(step_);
    if (step->empty() && !dropped_any_) return Status::OK();
    step->Finish();
    const uint64_t bytes = step->memory_bytes();
    UniqueMutexLock l(&mu_);
    if (dropping_ ||
        (options_.when_full == WriterOptions::WhenFull::kDropStep && !Accepts(bytes))) {
      ++stats_.steps_dropped;
      if (first_lost_step_ < 0) first_lost_step_ = step->step();
      if (!warned_drop_ && !options_.quiet) {
        warned_drop_ = true;
        std::fprintf(stderr,
                     "trainscope: the write queue of %s is full (%zu steps, %llu bytes queued; "
                     "limits %lld steps, %llu bytes); dropping step %lld and any later step that "
                     "does not fit (policy kDropStep). Raise max_queue_steps / max_queue_bytes or "
                     "save less to keep every step.\n",
                     dir_.c_str(), queue_.size() + static_cast<size_t>(in_flight_),
                     static_cast<unsigned long long>(queue_bytes_),
                     static_cast<long long>(options_.max_queue_steps),
                     static_cast<unsigned long long>(options_.max_queue_bytes),
                     static_cast<long long>(step->step()));
      }
      return Status::OK();
    }
    while (!Accepts(bytes)) room_cv_.Wait(&mu_);
    if (step->journaled()) {
      // The seal: from here on the step survives the process (docs/formats/journal.md).
      l.Unlock();
      Status s = step->status().ok() ? Seal(step.get()) : step->status();
      if (!s.ok()) {
        LoseStep(step.get(), s);
        return Status::OK();
      }
      l.Lock();
    }
    queue_bytes_ += bytes;
    stats_.queue_high_water = std::max<uint64_t>(stats_.queue_high_water, queue_bytes_);
    queue_.push_back(std::move(step));
    work_cv_.Signal();
    return Status::OK();
  }

  bool step_open() const { return step_ != nullptr; }

  Status SetClosureSteps(std::vector<ClosureStep> closures) {
    if (step_ == nullptr) return Status::InvalidArgument("SetClosureSteps: no step is open");
    step_->set_closures(std::move(closures));
    return Status::OK();
  }

  Status SetModelCalls(int64_t calls) {
    if (step_ == nullptr) return Status::InvalidArgument("SetModelCalls: no step is open");
    step_->set_model_calls(calls);
    return Status::OK();
  }

  Status WriteCollections(std::string_view json) {
    const std::string rel = trial_format::CollectionsFilePath(options_.worker);
    const std::string path = JoinPath(dir_, rel);
    Status s = CheckNoLinkBelow(dir_, std::string(Dirname(path)));
    if (s.ok()) s = env_->CreateDirs(std::string(Dirname(path)));
    if (s.ok()) s = env_->WriteFileAtomic(path, json, options_.sync);
    if (!s.ok()) RecordError(s.WithContext("writing collections file " + path));
    return s;
  }

  static IndexFile BuildIndex(const StepBuffer& step, const std::string& worker) {
    IndexFile index;
    index.mode = step.mode();
    index.mode_step = step.mode_step();
    index.shapes = step.shapes();
    index.closures = step.closures();
    index.model_calls = step.model_calls();
    if (step.has_records()) {
      index.event_file_name = trial_format::EventFilePath(step.step(), worker);
      index.tensors = step.TensorEntries();
    }
    return index;
  }

  // Journal mode, training thread: the step's index JSON and commit entry.
  Status Seal(StepBuffer* step) {
    if (step->EnsureSlot() == nullptr) return step->status();
    const IndexFile index = BuildIndex(*step, options_.worker);
    step->index_tensors = index.tensors.size();
    step->index_json = EncodeIndexFile(index);
    const uint64_t event_size = step->has_records() ? step->file_size() : 0;
    TS_ASSIGN_OR_RETURN(
        step->seq, journal_->Seal(step->slot().get(), step->step(), event_size, step->index_json));
    // The next step's slot starts with room for one like this one.
    reserve_hint_.store(event_size + step->index_json.size() + 4096, std::memory_order_relaxed);
    return Status::OK();
  }

  // Journal mode, training thread: a step that could not be stored (a full disk).
  void LoseStep(StepBuffer* step, const Status& s) {
    if (step->slot()) step->slot()->Remove();
    RecordError(s.WithContext("step " + std::to_string(step->step())));
    bool mark = false;
    {
      MutexLock l(&mu_);
      ++stats_.steps_failed;
      if (first_lost_step_ < 0) first_lost_step_ = step->step();
      mark = !marked_incomplete_;
      marked_incomplete_ = true;
    }
    if (mark) WriteIncompleteMarker(/*final=*/false);
  }

  Status Flush() {
    MutexLock l(&mu_);
    while (!queue_.empty() || in_flight_ != 0) idle_cv_.Wait(&mu_);
    return first_error_;
  }

  Status Close() {
    if (closed_) return first_error();
    if (step_) (void)EndStep();  // its error is recorded: first_error() below returns it
    {
      MutexLock l(&mu_);
      stop_ = true;
    }
    work_cv_.SignalAll();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    closed_ = true;
    if (journal_) {
      journal_->RemoveFiles();  // every step handed over is published or counted as failed
      journal_.reset();
    }
    WriterStats st;
    {
      MutexLock l(&mu_);
      st = stats_;
    }
    if (st.steps_failed > 0 || st.steps_dropped > 0) {
      WriteIncompleteMarker(/*final=*/true);
      if (!options_.quiet) {
        const Status err = first_error();
        std::fprintf(stderr,
                     "trainscope: the trial %s is incomplete: %lld of %lld steps were not "
                     "written (%lld lost to I/O errors, %lld dropped)%s%s; see %s\n",
                     dir_.c_str(), static_cast<long long>(st.steps_failed) + st.steps_dropped,
                     static_cast<long long>(st.steps_written) + st.steps_failed + st.steps_dropped,
                     static_cast<long long>(st.steps_failed),
                     static_cast<long long>(st.steps_dropped),
                     err.ok() ? "" : "; first error: ", err.ok() ? "" : err.ToString().c_str(),
                     JoinPath(dir_, trial_format::IncompleteMarkerPath(options_.worker)).c_str());
      }
    }
    // The job ended, whether or not every step reached the disk: readers waiting for the end
    // must not wait for ever; the incomplete marker says what is missing.
    if (options_.write_end_marker) {
      Status s = WriteEndOfJob(env_, dir_);
      if (!s.ok()) RecordError(s);
    }
    return first_error();
  }

  Status first_error() const {
    MutexLock l(&mu_);
    return first_error_;
  }

  WriterStats stats() const {
    MutexLock l(&mu_);
    WriterStats s = stats_;
    s.queue_bytes = queue_bytes_;
    return s;
  }

  const std::string& dir() const { return dir_; }
  const std::string& worker() const { return options_.worker; }

 private:
  // A step of `bytes` may join the queue now: it fits under the limit, or no step waits (so a
  // step larger than the limit is never refused for its size alone). REQUIRES: mu_ held.
  bool Accepts(uint64_t bytes) const TS_REQUIRES(mu_) {
    if (queue_.empty()) return true;
    const int64_t handed = static_cast<int64_t>(queue_.size()) + in_flight_;
    if (journal_ && handed >= journal_format::kEntries - 1) return false;  // log entries in use
    return queue_bytes_ + bytes <= options_.max_queue_bytes &&
           (options_.max_queue_steps <= 0 || handed < options_.max_queue_steps);
  }

  // ----- I/O threads

  // Each thread: take the next step, write its event file (in parallel with the other threads),
  // then wait for its turn and publish its index (in the order the steps were queued).
  void Run() TS_EXCLUDES(mu_) {
    UniqueMutexLock l(&mu_);
    for (;;) {
      while (!stop_ && queue_.empty()) work_cv_.Wait(&mu_);
      if (queue_.empty()) break;  // stop_ and drained
      std::unique_ptr<StepBuffer> step = std::move(queue_.front());
      queue_.pop_front();
      const uint64_t turn = next_take_++;
      ++in_flight_;
      l.Unlock();
      IndexFile index;
      std::string event_path;
      const bool journaled = step->journaled();
      Status s = journaled ? Status::OK() : WriteEvents(*step, &index, &event_path);
      l.Lock();
      while (next_publish_ != turn) publish_cv_.Wait(&mu_);
      l.Unlock();
      if (journaled) {
        s = PublishJournaled(step.get());
      } else {
        s = s.ok() ? PublishIndex(*step, index, event_path) : s;
      }
      const uint64_t bytes = step->memory_bytes();
      const uint64_t file_bytes = step->file_size();
      const int64_t step_number = step->step();
      const size_t tensors = journaled ? step->index_tensors : index.tensors.size();
      step.reset();  // frees chunks and keepalives (journal: unmaps the slot) outside the lock
      if (journaled) journal_->Prepare(reserve_hint_.load(std::memory_order_relaxed));
      if (!s.ok()) RecordError(s);
      l.Lock();
      ++next_publish_;
      publish_cv_.SignalAll();
      queue_bytes_ -= bytes;
      if (s.ok()) {
        ++stats_.steps_written;
        stats_.tensors_written += static_cast<int64_t>(tensors);
        stats_.bytes_written += file_bytes;
      } else {
        ++stats_.steps_failed;
        if (first_lost_step_ < 0) first_lost_step_ = step_number;
      }
      room_cv_.SignalAll();
      // The first loss (an I/O error here, or a step dropped by the training thread) is
      // recorded in the trial at once, while this step still counts as in flight (so Flush()
      // returns after it).
      if (!marked_incomplete_ && (stats_.steps_failed > 0 || stats_.steps_dropped > 0)) {
        marked_incomplete_ = true;
        l.Unlock();
        WriteIncompleteMarker(/*final=*/false);
        l.Lock();
      }
      --in_flight_;
      idle_cv_.SignalAll();
    }
    idle_cv_.SignalAll();
  }

  // Creates `dir` (and parents) unless this writer made it already; refuses a symbolic link
  // below the trial folder (CheckNoLinkBelow).
  Status EnsureDir(const std::string& dir, bool* created) {
    *created = false;
    {
      MutexLock l(&dirs_mu_);
      if (made_dirs_.count(dir)) return Status::OK();
    }
    TS_RETURN_IF_ERROR(CheckNoLinkBelow(dir_, dir));
    TS_RETURN_IF_ERROR(env_->CreateDirs(dir));
    MutexLock l(&dirs_mu_);
    *created = made_dirs_.insert(dir).second;
    return Status::OK();
  }

  Status SyncNewDir(const std::string& dir, bool created) {
    if (!options_.sync) return Status::OK();
    TS_RETURN_IF_ERROR(env_->SyncDir(dir));
    if (created) return env_->SyncDir(std::string(Dirname(dir)));
    return Status::OK();
  }

  Status WriteEventFile(const StepBuffer& step, const std::string& path) {
    const std::string folder(Dirname(path));
    bool created = false;
    TS_RETURN_IF_ERROR(EnsureDir(folder, &created));
    const std::string tmp = path + std::string(trial_format::kTmpSuffix);
    Status s;
    {
      auto file = env_->NewWritableFile(tmp);
      if (!file.ok()) return file.status();
      for (std::string_view seg : step.segments()) {
        s = (*file)->Append(seg);
        if (!s.ok()) break;
      }
      if (s.ok() && options_.sync) s = (*file)->Sync();
      Status c = (*file)->Close();
      if (s.ok()) s = c;
    }
    if (s.ok()) s = env_->RenameFile(tmp, path);
    if (!s.ok()) {
      (void)env_->RemoveFile(tmp);  // cleanup; the caller gets `s`
      return s;
    }
    return SyncNewDir(folder, created);
  }

  // The step's event file (if it has records) and its index entries. Runs in parallel with the
  // other I/O threads.
  Status WriteEvents(const StepBuffer& step, IndexFile* index, std::string* event_path) {
    index->mode = step.mode();
    index->mode_step = step.mode_step();
    index->shapes = step.shapes();
    index->closures = step.closures();
    index->model_calls = step.model_calls();
    if (!step.has_records()) return Status::OK();
    index->event_file_name = trial_format::EventFilePath(step.step(), options_.worker);
    *event_path = JoinPath(dir_, index->event_file_name);
    index->tensors = step.TensorEntries();
    Status s = WriteEventFile(step, *event_path);
    if (!s.ok()) {
      (void)env_->RemoveFile(*event_path);  // renamed but its folder could not be synced
      return s.WithContext("step " + std::to_string(step.step()));
    }
    return Status::OK();
  }

  // The step's index file, after its event file. Runs on one thread at a time, in step order.
  Status PublishIndex(const StepBuffer& step, const IndexFile& index,
                      const std::string& event_path) {
    const std::string index_path =
        JoinPath(dir_, trial_format::IndexFilePath(step.step(), options_.worker));
    const std::string index_folder(Dirname(index_path));
    bool created = false;
    Status s = EnsureDir(index_folder, &created);
    if (s.ok()) s = env_->WriteFileAtomic(index_path, EncodeIndexFile(index), options_.sync);
    if (s.ok() && created) s = SyncNewDir(index_folder, true);
    if (!s.ok()) {
      // Without its index the event file is unreachable: remove it so that the trial holds
      // complete steps only.
      if (!event_path.empty()) (void)env_->RemoveFile(event_path);  // cleanup, as above
      return s.WithContext("step " + std::to_string(step.step()));
    }
    return Status::OK();
  }

  // Journal mode, one thread at a time in step order: index .tmp, the slot truncated and renamed
  // to its event file, the index renamed into place (docs/formats/journal.md, Publication).
  Status PublishJournaled(StepBuffer* step) {
    JournalSlot* slot = step->slot().get();
    const uint64_t event_size = step->has_records() ? step->file_size() : 0;
    const std::string index_path =
        JoinPath(dir_, trial_format::IndexFilePath(step->step(), options_.worker));
    const std::string index_tmp = index_path + std::string(trial_format::kTmpSuffix);
    const std::string index_folder(Dirname(index_path));
    std::string event_path;
    bool index_created = false, event_created = false, renamed = false;
    Status s = EnsureDir(index_folder, &index_created);
    if (s.ok()) {
      auto f = env_->NewWritableFile(index_tmp);
      s = f.status();
      if (s.ok()) {
        s = (*f)->Append(step->index_json);
        if (s.ok() && options_.sync) s = (*f)->Sync();
        Status c = (*f)->Close();
        if (s.ok()) s = c;
      }
    }
    if (s.ok() && event_size > 0) {
      event_path = JoinPath(dir_, trial_format::EventFilePath(step->step(), options_.worker));
      const std::string event_folder(Dirname(event_path));
      s = EnsureDir(event_folder, &event_created);
      if (s.ok() && options_.sync) s = slot->Sync();
      if (s.ok()) s = slot->TruncateAndRename(event_size, event_path);
      renamed = s.ok();
      if (s.ok()) s = SyncNewDir(event_folder, event_created);
    }
    if (s.ok()) s = env_->RenameFile(index_tmp, index_path);
    if (s.ok()) s = SyncNewDir(index_folder, index_created);
    if (!s.ok()) {
      (void)env_->RemoveFile(index_tmp);  // cleanup; the caller gets `s`
      if (renamed) (void)env_->RemoveFile(event_path);
      slot->Remove();
      journal_->MarkAbandoned(step->seq);
      return s.WithContext("step " + std::to_string(step->step()));
    }
    slot->Remove();  // a shapes-only step's slot (an event slot was renamed: no-op)
    journal_->MarkPublished(step->seq);
    return Status::OK();
  }

  // <dir>/incomplete_<worker>.json (docs/formats/trial.md): what this writer lost so far.
  // Written at the first loss, so a reader following the trial or opening it after a SIGKILL
  // sees it, and again by Close() with the final counts ("final": true), each time atomically.
  // When the disk has no room for the content, an empty file (which needs no data block) still
  // says that steps were lost. Failures here are not reported again: the loss was.
  void WriteIncompleteMarker(bool final) {
    MutexLock ml(&marker_mu_);
    WriterStats st;
    Status err;
    int64_t first_lost;
    {
      MutexLock l(&mu_);
      st = stats_;
      err = first_error_;
      first_lost = first_lost_step_;
    }
    nlohmann::json j = {
        {"worker", options_.worker},
        {"final", final},
        {"steps_written", st.steps_written},
        {"steps_failed", st.steps_failed},
        {"steps_dropped", st.steps_dropped},
        {"first_lost_step", first_lost},
        {"first_error", err.ok() ? nlohmann::json(nullptr) : nlohmann::json(err.ToString())}};
    const std::string path = JoinPath(dir_, trial_format::IncompleteMarkerPath(options_.worker));
    const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (env_->WriteFileAtomic(path, text + "\n", options_.sync).ok()) return;
    if (!env_->FileExists(path)) {
      auto f = env_->NewWritableFile(path);
      if (f.ok()) (void)(*f)->Close();  // a last try: an empty marker still says "incomplete"
    }
  }

  void RecordError(const Status& s) {
    MutexLock l(&mu_);
    if (!first_error_.ok()) return;
    first_error_ = s;
    if (!options_.quiet) {
      std::fprintf(stderr,
                   "trainscope: writing the trial %s failed: %s\n"
                   "trainscope: the step is lost; training goes on and later steps will be "
                   "tried again. Free disk space or fix the folder's permissions.\n",
                   dir_.c_str(), s.ToString().c_str());
    }
  }

  const std::string dir_;
  const WriterOptions options_;
  Env* const env_;
  // Buffers of written steps, kept for reuse (fresh memory costs a page fault per 4 KiB on first
  // touch; see chunk_pool.h), up to max_queue_bytes; freed when the writer is destroyed.
  ChunkPool pool_;  // before every StepBuffer member: it must outlive them

  // Training thread only.
  std::unique_ptr<StepBuffer> step_;
  std::optional<int64_t> last_step_;
  bool dropping_ = false;     // the open step is being dropped (queue full at BeginStep)
  bool dropped_any_ = false;  // ... and something was added to it
  bool closed_ = false;

  // I/O threads.
  Mutex dirs_mu_;
  std::set<std::string> made_dirs_ TS_GUARDED_BY(dirs_mu_);

  // Shared, guarded by mu_.
  mutable Mutex mu_;
  CondVar work_cv_;     // queue non-empty or stop
  CondVar room_cv_;     // queue shrank
  CondVar idle_cv_;     // a step finished
  CondVar publish_cv_;  // next_publish_ moved
  std::deque<std::unique_ptr<StepBuffer>> queue_ TS_GUARDED_BY(mu_);
  // Memory of queued steps and of those being written.
  uint64_t queue_bytes_ TS_GUARDED_BY(mu_) = 0;
  int in_flight_ TS_GUARDED_BY(mu_) = 0;          // steps taken by I/O threads and not finished
  uint64_t next_take_ TS_GUARDED_BY(mu_) = 0;     // turn of the next step a thread takes
  uint64_t next_publish_ TS_GUARDED_BY(mu_) = 0;  // turn whose index goes out next
  bool stop_ TS_GUARDED_BY(mu_) = false;
  bool warned_drop_ TS_GUARDED_BY(mu_) = false;
  // The incomplete marker was written once.
  bool marked_incomplete_ TS_GUARDED_BY(mu_) = false;
  int64_t first_lost_step_ TS_GUARDED_BY(mu_) = -1;  // first step failed or dropped
  // One marker write at a time (taken before mu_, never inside it).
  Mutex marker_mu_ TS_ACQUIRED_BEFORE(mu_);
  WriterStats stats_ TS_GUARDED_BY(mu_);
  Status first_error_ TS_GUARDED_BY(mu_);

  std::vector<std::thread> threads_;
  // Journal mode (docs/formats/journal.md); null without it. Destroyed after the threads.
  std::unique_ptr<Journal> journal_;
  RecoveryReport recovery_;  // what OpenJournal recovered
  std::atomic<size_t> reserve_hint_{journal_format::kMinGrowth};
};

Result<std::unique_ptr<TrialWriter>> TrialWriter::Open(const std::string& dir,
                                                       WriterOptions options) {
  if (options.env == nullptr) options.env = Env::Default();
  if (options.worker.empty() || options.worker.find('/') != std::string::npos) {
    return Status::InvalidArgument("worker name \"" + options.worker +
                                   "\" must be non-empty and contain no '/'");
  }
  if (dir.empty()) return Status::InvalidArgument("TrialWriter needs a folder path");
  Status s = options.env->CreateDirs(dir);
  if (!s.ok()) return s.WithContext("creating the trial folder " + dir);
  auto impl = std::make_unique<Impl>(dir, std::move(options));
  TS_RETURN_IF_ERROR(impl->OpenJournal());
  impl->Start();
  return std::unique_ptr<TrialWriter>(new TrialWriter(std::move(impl)));
}

TrialWriter::TrialWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrialWriter::~TrialWriter() = default;

Status TrialWriter::BeginStep(int64_t global_step, Mode mode, int64_t mode_step) {
  return impl_->BeginStep(global_step, mode, mode_step);
}
Status TrialWriter::AddTensor(std::string_view name, const TensorView& v, double wall_time_s) {
  return impl_->AddTensor(name, v, false, nullptr, wall_time_s);
}
Status TrialWriter::AddTensorNoCopy(std::string_view name, const TensorView& v,
                                    std::shared_ptr<const void> keepalive) {
  return impl_->AddTensor(name, v, true, std::move(keepalive));
}
Status TrialWriter::AddShape(std::string_view name, const std::vector<int64_t>& shape) {
  return impl_->AddShape(name, shape);
}
Status TrialWriter::EndStep() { return impl_->EndStep(); }
bool TrialWriter::step_open() const { return impl_->step_open(); }
Status TrialWriter::SetClosureSteps(std::vector<ClosureStep> closures) {
  return impl_->SetClosureSteps(std::move(closures));
}
Status TrialWriter::SetModelCalls(int64_t calls) { return impl_->SetModelCalls(calls); }
Status TrialWriter::WriteCollections(std::string_view json) {
  return impl_->WriteCollections(json);
}
Status TrialWriter::Flush() { return impl_->Flush(); }
Status TrialWriter::Close() { return impl_->Close(); }
Status TrialWriter::first_error() const { return impl_->first_error(); }
WriterStats TrialWriter::stats() const { return impl_->stats(); }
const std::string& TrialWriter::dir() const { return impl_->dir(); }
const std::string& TrialWriter::worker() const { return impl_->worker(); }

Status WriteEndOfJob(Env* env, const std::string& dir) {
  if (env == nullptr) env = Env::Default();
  const std::string path = JoinPath(dir, trial_format::kEndOfJobFile);
  Status s = env->WriteFileAtomic(path, "", /*sync=*/false);
  return s.WithContext("writing the end-of-job marker " + path);
}

}  // namespace trainscope
