// The step journal (private to the store module): docs/formats/journal.md.
//
// A JournalSlot is one file of <trial>/.trainscope/journal/ mapped MAP_SHARED: the training
// thread encodes a step's records straight into it, so they are in the page cache (which outlives
// the process) as they are written. A Journal owns one worker's commit log (a mapped file of
// 64-byte entries) and the flock(2) that tells recovery the writer lives; Seal() makes a step
// recoverable with plain stores, no system call.
//
// Ownership: a slot owns its descriptor and mapping; the Journal hands slots out and owns the log.
// Thread safety: Journal::NewSlot, Seal, MarkPublished, MarkAbandoned may be called from any
// thread (seals from one thread at a time: the training thread). A JournalSlot is used by one
// thread at a time (the training thread fills it, then hands it to one I/O thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/status.h"
#include "trainscope/thread_annotations.h"
#include "trainscope/writer.h"

namespace trainscope {

namespace journal_format {
inline constexpr std::string_view kDir = ".trainscope/journal";
inline constexpr uint32_t kMagic = 0x314a5354;  // "TSJ1"
inline constexpr uint32_t kSealed = 1;
inline constexpr uint32_t kPublished = 2;
inline constexpr uint32_t kAbandoned = 3;  // lost to an I/O error; counted by the writer
inline constexpr int kEntries = 256;
inline constexpr size_t kEntrySize = 64;
inline constexpr size_t kLogBytes = kEntries * kEntrySize;
// Address space mapped per slot (the file grows inside it with fallocate): the largest step.
inline constexpr size_t kSlotMapBytes = size_t{64} << 30;
// Space is reserved in multiples of this (a reservation larger than the step costs a truncation).
inline constexpr size_t kMinGrowth = size_t{64} << 10;

std::string JournalDir(std::string_view trial_dir);
std::string LogPath(std::string_view trial_dir, std::string_view worker);
std::string SlotPath(std::string_view trial_dir, std::string_view worker, uint64_t id);
}  // namespace journal_format

class JournalSlot {
 public:
  ~JournalSlot();  // unmaps and closes; the file stays
  JournalSlot(const JournalSlot&) = delete;
  JournalSlot& operator=(const JournalSlot&) = delete;

  // Makes [0, n) storable: reserves disk space with fallocate (so a full disk is ENOSPC here,
  // never SIGBUS on a store). IOError naming the file otherwise.
  Status Ensure(size_t n);
  char* data() const { return base_; }
  uint64_t id() const { return id_; }
  const std::string& path() const { return path_; }
  Status Sync();
  // Truncates the file to `size` and renames it to `to` (a new name; never through a link).
  Status TruncateAndRename(uint64_t size, const std::string& to);
  void Remove();  // unlinks the file (if it still has its journal name)

 private:
  friend class Journal;
  JournalSlot() = default;
  int fd_ = -1;
  char* base_ = nullptr;
  size_t reserved_ = 0;
  uint64_t id_ = 0;
  std::string path_;
  bool moved_ = false;
};

class Journal {
 public:
  // Creates the journal folder, recovers what a dead writer of `worker` left (into *report, may
  // be null), then takes the worker's lock and starts an empty log. Aborted naming the folder if
  // a live writer holds the lock; NotSupported where the file system has no fallocate or shared
  // maps (the caller then works without a journal).
  static Result<std::unique_ptr<Journal>> Open(const std::string& trial_dir,
                                               const std::string& worker, RecoveryReport* report);
  ~Journal();  // unmaps the log and releases the lock; the files stay for recovery
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // A new slot with `reserve` bytes already fallocated (a prepared one when available).
  Result<std::unique_ptr<JournalSlot>> NewSlot(size_t reserve);
  // Prepares a slot ahead (called by I/O threads when idle), so that NewSlot costs no system
  // call and the first stores no page faults. Keeps at most one.
  void Prepare(size_t reserve);
  // Copies `json` after the event bytes [0, event_size) of `slot` and commits the step; returns
  // the entry's sequence number. After it returns the step survives the process.
  Result<uint64_t> Seal(JournalSlot* slot, int64_t step, uint64_t event_size,
                        std::string_view json);
  void MarkPublished(uint64_t seq) { SetState(seq, journal_format::kPublished); }
  void MarkAbandoned(uint64_t seq) { SetState(seq, journal_format::kAbandoned); }
  // Removes the journal's files (after Close drained everything).
  void RemoveFiles();

 private:
  Journal() = default;
  Result<std::unique_ptr<JournalSlot>> CreateSlot(size_t reserve, bool populate);
  void SetState(uint64_t seq, uint32_t state);

  std::string trial_dir_;
  std::string worker_;
  int lock_fd_ = -1;
  char* log_ = nullptr;
  uint64_t next_seq_ = 0;  // sealing thread only
  std::atomic<uint64_t> next_id_{0};
  Mutex prepared_mu_;
  std::unique_ptr<JournalSlot> prepared_ TS_GUARDED_BY(prepared_mu_);
};

// Recovers one worker's journal whose lock is held by the caller through `log_fd` (an open
// descriptor of its log). Adds to *report. Never throws.
void RecoverWorkerLocked(const std::string& trial_dir, const std::string& worker, int log_fd,
                         RecoveryReport* report);

}  // namespace trainscope
