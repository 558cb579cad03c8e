// IndexScanner: finds the index files of a trial that have not been handed out yet, and notices
// the end marker. Each file is handed out once (the set of handed-out files is kept as
// (step, worker id) pairs, not path strings).
//
// Two ways to learn of new files:
// - inotify (Env::NewChangeNotifier): the trial root, index/ and every index/<folder>/ are
//   watched as they appear; events name the new files, so no folder is listed again. A folder is
//   listed once right after its watch is added (files that landed before the watch). A queue
//   overflow falls back to one full listing.
// - polling (no notifier, or use_inotify = false): each List() lists index/ (one small folder),
//   every folder not listed before, and the folders that may still receive files: those at or
//   after the folder of `first_open_step` (the first step not yet complete).
//
// Only steps in [range_begin, range_end) are handed out (range_end < 0: unbounded).
//
// Thread safety: not thread-safe. The notifier methods (ProcessEvents, Drain, notifier()) need
// exclusive use of the notifier; the Trial serializes everything else with its refresh mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/status.h"

namespace trainscope {

struct FoundIndexFile {
  std::string path;  // absolute (root-joined) path
  int64_t step;
  std::string worker;
};

class IndexScanner {
 public:
  IndexScanner(Env* env, std::string root, int64_t range_begin, int64_t range_end);

  // Creates the notifier and the first watches when `use_inotify` and the Env supports it.
  // Checks for the end marker.
  Status Init(bool use_inotify);
  // False when polling. Turns false for good if a watch cannot be added (e.g. the inotify watch
  // limit): the scanner then lists everything once and polls. Safe to read from any thread.
  bool watching() const { return watching_.load(std::memory_order_acquire); }
  bool end_marker_seen() const { return end_marker_seen_; }

  // Polling: lists as described above and appends unseen files to *out (sorted by step, worker).
  // Also used with a notifier when the notifier is busy in another thread.
  Status List(int64_t first_open_step, std::vector<FoundIndexFile>* out);
  // With a notifier: reads pending events without blocking and handles them.
  // REQUIRES: watching(); exclusive use of the notifier and of the scanner.
  Status Drain(std::vector<FoundIndexFile>* out);
  // With a notifier: blocks up to `timeout` for events (appends them to *changes). Touches only
  // the notifier, so the scanner may be used meanwhile (List) by another thread.
  // Unavailable means events were dropped; pass it on to HandleEvents.
  // REQUIRES: watching(); exclusive use of the notifier.
  Status WaitEvents(std::chrono::milliseconds timeout, std::vector<DirChange>* changes);
  // Handles what WaitEvents returned: appends new files; watches and lists new folders; after
  // dropped events, lists everything once. If a watch cannot be added, stops watching for good
  // and lists everything (watching() turns false).
  // REQUIRES: watching(); exclusive use of the notifier and of the scanner.
  Status HandleEvents(const Status& wait_status, const std::vector<DirChange>& changes,
                      std::vector<FoundIndexFile>* out);

  // Closes the notifier, giving its inotify instance back (Linux allows 128 per user by
  // default, shared by all their programs), and polls from then on. For a trial that is
  // complete: nothing more will come.
  // REQUIRES: exclusive use of the notifier.
  void StopWatching() {
    watching_.store(false, std::memory_order_release);
    notifier_.reset();
  }

  // Number of files handed out so far.
  size_t num_handed_out() const { return handed_out_.size(); }

 private:
  struct Key {
    int64_t step;
    uint32_t worker;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<int64_t>()(k.step) * 31 + k.worker; }
  };

  bool InRange(int64_t step) const;
  bool FolderInRange(int64_t folder) const;
  // Hands out `name` of `folder_path` if it is an unseen index file in range.
  void Consider(const std::string& folder_path, const std::string& name,
                std::vector<FoundIndexFile>* out);
  Status ListFolder(int64_t folder, std::vector<FoundIndexFile>* out);
  // Lists index/; appends (sorted) the folders in range that List() has not listed before.
  Status ListIndexDir(std::vector<int64_t>* new_folders);
  Status WatchIndexDir(std::vector<FoundIndexFile>* out);
  Status WatchFolder(int64_t folder, std::vector<FoundIndexFile>* out);
  Status Handle(const Status& wait_status, const std::vector<DirChange>& changes,
                std::vector<FoundIndexFile>* out);
  std::string FolderPath(int64_t folder) const;

  Env* env_;
  std::string root_;
  std::string index_dir_;
  std::string end_marker_;
  int64_t range_begin_;
  int64_t range_end_;
  std::unique_ptr<ChangeNotifier> notifier_;
  std::atomic<bool> watching_{false};
  bool index_watched_ = false;
  bool end_marker_seen_ = false;
  std::set<int64_t> listed_;   // folders listed at least once by List()
  std::set<int64_t> watched_;  // folders watched (each listed once after its watch)
  std::unordered_map<std::string, uint32_t> worker_ids_;
  std::unordered_set<Key, KeyHash> handed_out_;
};

}  // namespace trainscope
