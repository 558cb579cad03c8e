// Trial::Impl: following the trial as it grows (Refresh, MaybeRefresh, WaitForChange).
#include <algorithm>
#include <thread>

#include "store/index_fast_parser.h"
#include "store/index_file.h"
#include "store/trial_impl.h"
#include "trainscope/trial_format.h"

namespace trainscope {

namespace {

using Clock = std::chrono::steady_clock;

// Index files read (and parsed outside the lock) per merge into the index.
constexpr size_t kLoadBatch = 256;
// How often WaitForChange lists folders when it cannot watch them.
constexpr std::chrono::milliseconds kPollPeriod(20);

// One index file of a batch. `view` points into `text` or into `slow`, so a Parsed never moves
// once parsed (the batch vector is sized up front).
struct Parsed {
  FoundIndexFile* file = nullptr;
  std::string text;
  std::optional<IndexFile> slow;  // set when the fast parser declined the text
  IndexFileView view;
  bool ok = false;
};

}  // namespace

Status Trial::Impl::Init() {
  MutexLock rl(&refresh_mu_);
  return scanner_.Init(options_.use_inotify);
}

Status Trial::Impl::Scan(bool have_notifier, std::vector<FoundIndexFile>* found) {
  if (!retry_.empty()) {
    found->insert(found->end(), std::make_move_iterator(retry_.begin()),
                  std::make_move_iterator(retry_.end()));
    retry_.clear();
  }
  if (scanner_.watching()) {
    if (have_notifier) return scanner_.Drain(found);
    if (notifier_mu_.TryLock()) {
      TimedMutexLock nl(&notifier_mu_, std::adopt_lock);
      if (scanner_.watching()) return scanner_.Drain(found);
    }
    // Another thread is blocked in WaitForChange on the notifier: list instead of waiting.
  }
  int64_t first_open;
  {
    MutexLock l(&mu_);
    first_open = tracker_.last_complete_step() + 1;
  }
  return scanner_.List(first_open, found);
}

Status Trial::Impl::Load(std::vector<FoundIndexFile>& found, bool* changed) {
  Status first_error;
  int more_errors = 0;
  auto note = [&](Status s) {
    if (first_error.ok()) {
      first_error = std::move(s);
    } else {
      ++more_errors;
    }
  };
  std::vector<Parsed> batch(std::min(found.size(), kLoadBatch));
  for (size_t begin = 0; begin < found.size(); begin += kLoadBatch) {
    const size_t end = std::min(found.size(), begin + kLoadBatch);
    // Read and parse without holding mu_: queries go on meanwhile.
    for (size_t i = begin; i < end; ++i) {
      Parsed& p = batch[i - begin];
      p.file = &found[i];
      p.ok = false;
      p.slow.reset();
      // Bounded: a larger file (sparse, runaway) is refused by its size, never read.
      auto text = env_->ReadFile(p.file->path, trial_format::kMaxIndexFileBytes);
      if (text.status().code() == StatusCode::kOutOfRange) {
        Status too_big = Status::Corruption("index file " + text.status().message());
        note(too_big);
        MutexLock l(&mu_);
        if (damaged_.size() < kMaxDamaged) damaged_.push_back(too_big.message());
        continue;
      }
      if (!text.ok()) {
        // Gone (renamed away by a cleanup): skip it. Anything else: try again next refresh.
        if (text.status().code() != StatusCode::kNotFound) {
          note(text.status());
          retry_.push_back(*p.file);
        }
        continue;
      }
      p.text = std::move(text).value();
      if (FastParseIndexFile(p.text, &p.view)) {
        p.ok = true;
        continue;
      }
      // Outside the fast parser's subset: the full parser decides (and names the error).
      auto parsed = ParseIndexFile(p.text, p.file->path);
      if (!parsed.ok()) {
        note(parsed.status());  // a damaged file is reported once and not read again
        MutexLock l(&mu_);
        if (damaged_.size() < kMaxDamaged) damaged_.push_back(parsed.status().message());
        continue;
      }
      p.slow = std::move(parsed).value();
      ViewOf(*p.slow, &p.view);
      p.ok = true;
    }
    MutexLock l(&mu_);
    for (size_t i = 0; i < end - begin; ++i) {
      const Parsed& p = batch[i];
      if (!p.ok) continue;
      const IndexFileView& ix = p.view;
      const uint16_t worker = index_.InternWorker(p.file->worker);
      if (ix.tensors.empty() && ix.shapes.empty()) continue;
      const uint32_t fid = index_.AddFile(p.file->step, worker, ix.mode, ix.mode_step,
                                          std::string(ix.event_file_name));
      for (const IndexTensorEntryView& e : ix.tensors) {
        index_.AddLocation(fid, e.tensorname, e.start_idx, e.length, e.crc32c);
      }
      for (const IndexShapeEntryView& e : ix.shapes) {
        index_.AddShape(fid, e.tensorname,
                        std::span<const int64_t>(ix.dims.data() + e.first_dim, e.num_dims));
      }
      if (ix.closures != nullptr) index_.SetClosures(p.file->step, worker, *ix.closures);
      if (ix.model_calls > 0) index_.SetModelCalls(p.file->step, worker, ix.model_calls);
      tracker_.AddWorkerStep(p.file->step, ix.mode, ix.mode_step);
      *changed = true;
    }
    tracker_.ApplyWindow();
  }
  if (more_errors > 0) {
    return first_error.WithContext("reading index files (" + std::to_string(more_errors) +
                                   " more failed)");
  }
  return first_error;
}

std::chrono::microseconds EndDelayLeft(std::chrono::microseconds delay,
                                       const Result<uint64_t>& written, uint64_t now) {
  if (delay.count() <= 0) return std::chrono::microseconds(0);
  // A marker written `delay` ago or longer (a finished trial opened later, or the summary after
  // the training exited) needs no wait. Where its time is unknown, or it seems to come from the
  // future (the clocks of two machines), the whole delay. A time in whole seconds may be a file
  // system that keeps no fraction (FAT, some network ones), up to seconds early: it cannot date
  // the marker closely enough.
  if (!written.ok() || *written % 1000000 == 0 || now < *written) return delay;
  const uint64_t age = now - *written;
  if (age >= static_cast<uint64_t>(delay.count())) return std::chrono::microseconds(0);
  return delay - std::chrono::microseconds(static_cast<int64_t>(age));
}

std::chrono::microseconds Trial::Impl::EndDelayLeft() {
  if (options_.end_delay.count() <= 0) return std::chrono::microseconds(0);
  return trainscope::EndDelayLeft(
      options_.end_delay, env_->GetModificationMicros(JoinPath(path_, trial_format::kEndOfJobFile)),
      env_->NowMicros());
}

Status Trial::Impl::RefreshLocked(std::vector<FoundIndexFile>* found_in, bool have_notifier,
                                  bool* changed) {
  std::vector<FoundIndexFile> found;
  if (found_in != nullptr) found = std::move(*found_in);
  Status scan = Scan(have_notifier, &found);
  Status status = Load(found, changed);
  if (status.ok()) status = scan;
  bool finish = false;
  if (scanner_.end_marker_seen()) {
    MutexLock l(&mu_);
    finish = !tracker_.loaded_all_steps();
  }
  if (finish) {
    // smdebug's final refresh: files may still land just after the end marker (another
    // worker, a slow sync), so wait until end_delay has passed since it was written, read once
    // more, then declare all steps loaded.
    if (auto wait = EndDelayLeft(); wait.count() > 0) std::this_thread::sleep_for(wait);
    found.clear();
    Status s = Scan(have_notifier, &found);
    Status l2 = Load(found, changed);
    if (status.ok()) status = s.ok() ? l2 : s;
    MutexLock l(&mu_);
    tracker_.SetLoadedAll();
    *changed = true;
  }
  MutexLock l(&mu_);
  refreshed_once_ = true;
  last_refresh_ = Clock::now();
  return status;
}

Status Trial::Impl::Refresh(bool* changed) {
  bool ignored = false;
  Status s;
  {
    MutexLock rl(&refresh_mu_);
    s = RefreshLocked(nullptr, /*have_notifier=*/false, changed ? changed : &ignored);
  }
  CloseNotifierIfDone();
  return s;
}

void Trial::Impl::CloseNotifierIfDone() {
  if (!Watching() || !loaded_all_steps()) return;
  // A thread waits on the notifier: it closes it when it sees the end.
  if (!notifier_mu_.TryLock()) return;
  TimedMutexLock nl(&notifier_mu_, std::adopt_lock);
  MutexLock rl(&refresh_mu_);
  if (scanner_.watching()) scanner_.StopWatching();
}

Status Trial::Impl::MaybeRefresh() {
  {
    MutexLock l(&mu_);
    if (tracker_.loaded_all_steps()) return Status::OK();
    if (refreshed_once_ && options_.refresh_interval.count() > 0 &&
        Clock::now() - last_refresh_ < options_.refresh_interval) {
      return Status::OK();
    }
  }
  return Refresh(nullptr);
}

Status Trial::Impl::WaitForChange(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  bool changed = false;
  TS_RETURN_IF_ERROR(Refresh(&changed));
  while (!changed) {
    if (loaded_all_steps()) {  // nothing more will come
      CloseNotifierIfDone();
      return Status::OK();
    }
    const auto now = Clock::now();
    if (now >= deadline) return Status::OK();
    if (Watching()) {
      if (!notifier_mu_.TryLockUntil(deadline)) return Status::OK();
      TimedMutexLock nl(&notifier_mu_, std::adopt_lock);
      if (!Watching()) continue;
      const auto remaining = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      std::vector<DirChange> changes;
      Status ws = WaitNotifierEvents(std::max(remaining, std::chrono::milliseconds(0)), &changes);
      if (ws.ok() && changes.empty()) continue;  // timed out
      MutexLock rl(&refresh_mu_);
      std::vector<FoundIndexFile> found;
      Status hs = scanner_.HandleEvents(ws, changes, &found);
      Status rs = RefreshLocked(&found, /*have_notifier=*/true, &changed);
      if (loaded_all_steps()) scanner_.StopWatching();  // this thread has the notifier
      TS_RETURN_IF_ERROR(hs);
      TS_RETURN_IF_ERROR(rs);
    } else {
      std::this_thread::sleep_for(std::min<Clock::duration>(kPollPeriod, deadline - Clock::now()));
      TS_RETURN_IF_ERROR(Refresh(&changed));
    }
  }
  return Status::OK();
}

}  // namespace trainscope
