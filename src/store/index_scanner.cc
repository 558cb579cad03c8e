#include "store/index_scanner.h"

#include <algorithm>
#include <charconv>
#include <cstddef>

#include "trainscope/trial_format.h"

namespace trainscope {

namespace {

namespace tf = trial_format;

constexpr std::string_view kJsonSuffix = ".json";

// "000000003" -> 3 (a folder of index/); nullopt for anything else.
std::optional<int64_t> ParseFolder(std::string_view name) {
  if (name.empty() || name.size() > 19) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc() || ptr != name.data() + name.size()) return std::nullopt;
  return v;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

bool SortByStepWorker(const FoundIndexFile& a, const FoundIndexFile& b) {
  return a.step != b.step ? a.step < b.step : a.worker < b.worker;
}

}  // namespace

IndexScanner::IndexScanner(Env* env, std::string root, int64_t range_begin, int64_t range_end)
    : env_(env),
      root_(std::move(root)),
      index_dir_(JoinPath(root_, tf::kIndexDir)),
      end_marker_(JoinPath(root_, tf::kEndOfJobFile)),
      range_begin_(range_begin),
      range_end_(range_end) {}

bool IndexScanner::InRange(int64_t step) const {
  return step >= range_begin_ && (range_end_ < 0 || step < range_end_);
}

bool IndexScanner::FolderInRange(int64_t folder) const {
  const int64_t first = folder * tf::kIndexFilesPerFolder;
  const int64_t last = first + tf::kIndexFilesPerFolder - 1;
  return last >= range_begin_ && (range_end_ < 0 || first < range_end_);
}

std::string IndexScanner::FolderPath(int64_t folder) const {
  return JoinPath(root_, tf::IndexFolder(folder * tf::kIndexFilesPerFolder));
}

Status IndexScanner::Init(bool use_inotify) {
  if (use_inotify) {
    auto n = env_->NewChangeNotifier();
    if (n.ok()) {
      notifier_ = std::move(n).value();
      // Watch the root first, so an index/ or end marker created from now on is reported.
      Status s = notifier_->Watch(root_);
      if (!s.ok()) notifier_.reset();  // e.g. out of watches: poll instead
    }
    watching_.store(notifier_ != nullptr, std::memory_order_release);
  }
  end_marker_seen_ = env_->FileExists(end_marker_);
  return Status::OK();
}

void IndexScanner::Consider(const std::string& folder_path, const std::string& name,
                            std::vector<FoundIndexFile>* out) {
  if (name.size() <= kJsonSuffix.size() ||
      name.compare(name.size() - kJsonSuffix.size(), kJsonSuffix.size(), kJsonSuffix) != 0) {
    return;  // .tmp files, legacy .csv, anything else
  }
  auto parsed = tf::ParseStepFileName(name);
  if (!parsed || !InRange(parsed->step)) return;
  auto [wit, inserted] =
      worker_ids_.emplace(parsed->worker, static_cast<uint32_t>(worker_ids_.size()));
  (void)inserted;  // a known worker keeps its id
  if (!handed_out_.insert(Key{parsed->step, wit->second}).second) return;
  out->push_back(
      FoundIndexFile{JoinPath(folder_path, name), parsed->step, std::move(parsed->worker)});
}

Status IndexScanner::ListFolder(int64_t folder, std::vector<FoundIndexFile>* out) {
  const std::string path = FolderPath(folder);
  auto names = env_->GetChildren(path);
  if (!names.ok()) {
    if (names.status().code() == StatusCode::kNotFound) return Status::OK();
    return names.status();
  }
  for (const std::string& name : *names) Consider(path, name, out);
  return Status::OK();
}

Status IndexScanner::ListIndexDir(std::vector<int64_t>* new_folders) {
  auto names = env_->GetChildren(index_dir_);
  if (!names.ok()) {
    if (names.status().code() == StatusCode::kNotFound) return Status::OK();  // not yet
    return names.status();
  }
  for (const std::string& name : *names) {
    auto folder = ParseFolder(name);
    if (!folder || !FolderInRange(*folder)) continue;
    if (listed_.insert(*folder).second) new_folders->push_back(*folder);
  }
  std::sort(new_folders->begin(), new_folders->end());
  return Status::OK();
}

Status IndexScanner::List(int64_t first_open_step, std::vector<FoundIndexFile>* out) {
  const size_t before = out->size();
  if (!end_marker_seen_) end_marker_seen_ = env_->FileExists(end_marker_);
  std::vector<int64_t> fresh;
  TS_RETURN_IF_ERROR(ListIndexDir(&fresh));
  // Known folders that may still receive files, then the new ones.
  const int64_t open_folder =
      FloorDiv(std::max(first_open_step, range_begin_), tf::kIndexFilesPerFolder);
  for (auto it = listed_.lower_bound(open_folder); it != listed_.end(); ++it) {
    if (!std::binary_search(fresh.begin(), fresh.end(), *it)) {
      TS_RETURN_IF_ERROR(ListFolder(*it, out));
    }
  }
  for (int64_t f : fresh) TS_RETURN_IF_ERROR(ListFolder(f, out));
  std::sort(out->begin() + static_cast<std::ptrdiff_t>(before), out->end(), SortByStepWorker);
  return Status::OK();
}

Status IndexScanner::WatchIndexDir(std::vector<FoundIndexFile>* out) {
  if (index_watched_ || !env_->IsDirectory(index_dir_)) return Status::OK();
  TS_RETURN_IF_ERROR(notifier_->Watch(index_dir_));
  index_watched_ = true;
  // Folders made before the watch: watch and list each (after the watch, so none is missed).
  auto names = env_->GetChildren(index_dir_);
  if (!names.ok()) return names.status();
  std::vector<int64_t> folders;
  for (const std::string& name : *names) {
    auto folder = ParseFolder(name);
    if (folder && FolderInRange(*folder)) folders.push_back(*folder);
  }
  std::sort(folders.begin(), folders.end());
  for (int64_t f : folders) TS_RETURN_IF_ERROR(WatchFolder(f, out));
  return Status::OK();
}

Status IndexScanner::WatchFolder(int64_t folder, std::vector<FoundIndexFile>* out) {
  if (!watched_.insert(folder).second) return Status::OK();  // watched already
  TS_RETURN_IF_ERROR(notifier_->Watch(FolderPath(folder)));
  return ListFolder(folder, out);
}

Status IndexScanner::Handle(const Status& wait_status, const std::vector<DirChange>& changes,
                            std::vector<FoundIndexFile>* out) {
  const size_t before = out->size();
  if (!index_watched_) TS_RETURN_IF_ERROR(WatchIndexDir(out));
  for (const DirChange& c : changes) {
    if (c.dir == root_) {
      if (c.name == tf::kEndOfJobFile) end_marker_seen_ = true;
      if (c.name == tf::kIndexDir) TS_RETURN_IF_ERROR(WatchIndexDir(out));
    } else if (c.dir == index_dir_) {
      auto folder = ParseFolder(c.name);
      if (folder && FolderInRange(*folder)) TS_RETURN_IF_ERROR(WatchFolder(*folder, out));
    } else {
      Consider(c.dir, c.name, out);
    }
  }
  if (wait_status.code() == StatusCode::kUnavailable) {
    // Events were dropped: list everything once (handed-out files are skipped).
    if (!end_marker_seen_) end_marker_seen_ = env_->FileExists(end_marker_);
    for (int64_t f : watched_) TS_RETURN_IF_ERROR(ListFolder(f, out));
    if (index_watched_) {
      std::vector<int64_t> fresh;
      auto names = env_->GetChildren(index_dir_);
      if (!names.ok()) return names.status();
      for (const std::string& name : *names) {
        auto folder = ParseFolder(name);
        if (folder && FolderInRange(*folder)) fresh.push_back(*folder);
      }
      for (int64_t f : fresh) TS_RETURN_IF_ERROR(WatchFolder(f, out));
    }
  } else if (!wait_status.ok()) {
    return wait_status;
  }
  std::sort(out->begin() + static_cast<std::ptrdiff_t>(before), out->end(), SortByStepWorker);
  return Status::OK();
}

Status IndexScanner::Drain(std::vector<FoundIndexFile>* out) {
  std::vector<DirChange> changes;
  Status s = WaitEvents(std::chrono::milliseconds(0), &changes);
  return HandleEvents(s, changes, out);
}

Status IndexScanner::WaitEvents(std::chrono::milliseconds timeout,
                                std::vector<DirChange>* changes) {
  return notifier_->Wait(timeout, changes);
}

Status IndexScanner::HandleEvents(const Status& wait_status, const std::vector<DirChange>& changes,
                                  std::vector<FoundIndexFile>* out) {
  Status s = Handle(wait_status, changes, out);
  if (s.ok()) return s;
  // A watch could not be added or the notifier failed: poll from now on. Nothing is lost: List
  // skips files handed out already and lists every folder it has not listed.
  watching_.store(false, std::memory_order_release);
  notifier_.reset();
  return List(range_begin_, out);
}

}  // namespace trainscope
