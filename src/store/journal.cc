// The step journal and its recovery (src/store/journal.h, docs/formats/journal.md).
#include "store/journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "store/index_file.h"
#include "store/record_io.h"
#include "trainscope/crc32c.h"
#include "trainscope/env.h"
#include "trainscope/trial_format.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace trainscope {

namespace journal_format {
std::string JournalDir(std::string_view trial_dir) { return JoinPath(trial_dir, kDir); }
std::string LogPath(std::string_view trial_dir, std::string_view worker) {
  return JoinPath(JournalDir(trial_dir), std::string(worker) + ".log");
}
std::string SlotPath(std::string_view trial_dir, std::string_view worker, uint64_t id) {
  return JoinPath(JournalDir(trial_dir), std::string(worker) + "." + std::to_string(id) + ".slot");
}
}  // namespace journal_format

namespace jf = journal_format;

Status CheckNoLinkBelow(const std::string& root, const std::string& path) {
  if (path.size() <= root.size() || path.compare(0, root.size(), root) != 0) return Status::OK();
  size_t pos = root.size();
  while (pos < path.size()) {
    size_t next = path.find('/', pos + 1);
    if (next == std::string::npos) next = path.size();
    const std::string prefix = path.substr(0, next);
    struct stat st {};
    if (::lstat(prefix.c_str(), &st) != 0) return Status::OK();
    if (S_ISLNK(st.st_mode)) {
      return Status::IOError(prefix +
                             " is a symbolic link: trainscope does not write through links under "
                             "the output folder (one may lead out of the trial); remove it, or "
                             "choose another output folder");
    }
    pos = next;
  }
  return Status::OK();
}

namespace {

void PutU32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void PutU64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

struct Entry {
  uint32_t state = 0;
  uint64_t seq = 0;
  int64_t step = 0;
  uint64_t event_size = 0;
  uint32_t json_size = 0;
  uint32_t json_crc = 0;
  uint64_t slot_id = 0;
};

bool DecodeEntry(const char* p, Entry* e) {
  if (GetU32(p) != jf::kMagic) return false;
  if (crc32c::Value(p + 8, 52) != GetU32(p + 60)) return false;
  e->state = GetU32(p + 4);
  e->seq = GetU64(p + 8);
  e->step = static_cast<int64_t>(GetU64(p + 16));
  e->event_size = GetU64(p + 24);
  e->json_size = GetU32(p + 32);
  e->json_crc = GetU32(p + 36);
  e->slot_id = GetU64(p + 40);
  return e->state >= jf::kSealed && e->state <= jf::kAbandoned && e->step >= 0;
}

Status ReadAt(int fd, uint64_t offset, size_t n, std::string* out, const std::string& path) {
  out->resize(n);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, out->data() + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("read", path, errno);
    if (r == 0) return Status::Corruption(path + " ends at byte " + std::to_string(offset + done));
    done += static_cast<size_t>(r);
  }
  return Status::OK();
}

// A regular file's size, or -1 when it does not exist; refuses links and special files.
Result<int64_t> RegularSize(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return int64_t{-1};
    return Status::FromErrno("stat", path, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Corruption(path + " is not a regular file (a link or a special file)");
  }
  return static_cast<int64_t>(st.st_size);
}

Status ReadSmallFile(const std::string& path, size_t n, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open", path, errno);
  Status s = ReadAt(fd, 0, n, out, path);
  ::close(fd);
  return s;
}

Status EnsureFolder(const std::string& trial, const std::string& folder) {
  TS_RETURN_IF_ERROR(CheckNoLinkBelow(trial, folder));
  return Env::Default()->CreateDirs(folder);
}

// Checks the index JSON and every record it names against the slot's bytes.
Status VerifyStep(const std::string& trial, const std::string& worker, const Entry& e,
                  const std::string& json, int slot_fd, const std::string& slot_path) {
  if (crc32c::Value(json.data(), json.size()) != e.json_crc) {
    return Status::Corruption("the index JSON of the journal does not match its CRC32C");
  }
  TS_ASSIGN_OR_RETURN(IndexFile index, ParseIndexFile(json, slot_path));
  const std::string want = e.event_size > 0 ? trial_format::EventFilePath(e.step, worker) : "";
  if (index.event_file_name != want) {
    return Status::Corruption("the journal's index names event file \"" + index.event_file_name +
                              "\", expected \"" + want + "\"");
  }
  if (slot_fd < 0) return Status::OK();
  std::string rec;
  for (const IndexTensorEntry& t : index.tensors) {
    if (t.length < trial_format::kHeaderSize + trial_format::kFooterSize ||
        t.start_idx > e.event_size || t.length > e.event_size - t.start_idx) {
      return Status::Corruption("tensor \"" + t.tensorname + "\" lies outside the step's " +
                                std::to_string(e.event_size) + " event bytes");
    }
    if (!t.crc32c) continue;
    TS_RETURN_IF_ERROR(ReadAt(slot_fd, t.start_idx, t.length, &rec, slot_path));
    const uint32_t crc =
        crc32c::Value(rec.data() + trial_format::kHeaderSize,
                      rec.size() - trial_format::kHeaderSize - trial_format::kFooterSize);
    if (crc != *t.crc32c) {
      return Status::Corruption("tensor \"" + t.tensorname + "\" at byte " +
                                std::to_string(t.start_idx) + " of " + slot_path +
                                " does not match its CRC32C");
    }
  }
  (void)trial;  // unused: the slot and its index are checked, not the trial
  return Status::OK();
}

Status WriteIndexTmp(const std::string& tmp, const std::string& json) {
  auto f = Env::Default()->NewWritableFile(tmp);
  if (!f.ok()) return f.status();
  Status s = (*f)->Append(json);
  Status c = (*f)->Close();
  return s.ok() ? c : s;
}

// Publishes one sealed step; *published_before is set when it was already published.
Status RecoverStep(const std::string& trial, const std::string& worker, const Entry& e,
                   bool* published_before) {
  *published_before = false;
  const std::string index_path = JoinPath(trial, trial_format::IndexFilePath(e.step, worker));
  const std::string index_tmp = index_path + std::string(trial_format::kTmpSuffix);
  const std::string event_path =
      e.event_size > 0 ? JoinPath(trial, trial_format::EventFilePath(e.step, worker)) : "";
  const std::string slot_path = jf::SlotPath(trial, worker, e.slot_id);
  TS_ASSIGN_OR_RETURN(int64_t index_size, RegularSize(index_path));
  if (index_size >= 0) {
    *published_before = true;
    return Status::OK();
  }
  TS_ASSIGN_OR_RETURN(int64_t slot_size, RegularSize(slot_path));
  const uint64_t need = e.event_size + e.json_size;
  std::string json;
  if (slot_size >= 0) {
    const uint64_t have = static_cast<uint64_t>(slot_size);
    const bool truncated = have == e.event_size && e.json_size > 0;
    if (have < need && !truncated) {
      return Status::Corruption(slot_path + " holds " + std::to_string(have) +
                                " bytes; the step needs " + std::to_string(need));
    }
    int fd = ::open(slot_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno("open", slot_path, errno);
    Status s = truncated ? ReadSmallFile(index_tmp, e.json_size, &json)
                         : ReadAt(fd, e.event_size, e.json_size, &json, slot_path);
    if (s.ok()) s = VerifyStep(trial, worker, e, json, fd, slot_path);
    if (s.ok()) s = EnsureFolder(trial, std::string(Dirname(index_path)));
    if (s.ok()) s = WriteIndexTmp(index_tmp, json);
    if (s.ok() && e.event_size > 0) s = EnsureFolder(trial, std::string(Dirname(event_path)));
    if (s.ok() && e.event_size > 0) {
      if (::ftruncate(fd, static_cast<off_t>(e.event_size)) != 0) {
        s = Status::FromErrno("truncate", slot_path, errno);
      } else if (::rename(slot_path.c_str(), event_path.c_str()) != 0) {
        s = Status::FromErrno("rename to " + event_path, slot_path, errno);
      }
    }
    ::close(fd);
    if (s.ok() && ::rename(index_tmp.c_str(), index_path.c_str()) != 0) {
      s = Status::FromErrno("rename to " + index_path, index_tmp, errno);
    }
    if (!s.ok()) (void)::unlink(index_tmp.c_str());  // cleanup; the caller gets `s`
    return s;
  }
  // No slot: the kill came between the slot's rename and the index's.
  if (e.event_size > 0) {
    TS_ASSIGN_OR_RETURN(int64_t event_size, RegularSize(event_path));
    if (event_size != static_cast<int64_t>(e.event_size)) {
      return Status::NotFound("its journal slot " + slot_path + " is missing and its event file " +
                              event_path +
                              (event_size < 0 ? " does not exist" : " has the wrong size"));
    }
  }
  Status s = ReadSmallFile(index_tmp, e.json_size, &json);
  if (!s.ok()) {
    return Status::NotFound("its journal slot " + slot_path + " and its index " + index_tmp +
                            " are missing: " + s.ToString());
  }
  TS_RETURN_IF_ERROR(VerifyStep(trial, worker, e, json, -1, slot_path));
  if (::rename(index_tmp.c_str(), index_path.c_str()) != 0) {
    return Status::FromErrno("rename to " + index_path, index_tmp, errno);
  }
  return Status::OK();
}

// <worker>.<id>.slot names in the journal folder.
std::vector<std::string> SlotFiles(const std::string& trial, const std::string& worker) {
  std::vector<std::string> out;
  const std::string dir = jf::JournalDir(trial);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  const std::string prefix = worker + ".";
  while (dirent* ent = ::readdir(d)) {
    std::string_view n = ent->d_name;
    if (n.size() <= prefix.size() + 5 || n.substr(0, prefix.size()) != prefix ||
        n.substr(n.size() - 5) != ".slot") {
      continue;
    }
    std::string_view id = n.substr(prefix.size(), n.size() - prefix.size() - 5);
    if (id.empty() ||
        !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    out.push_back(JoinPath(dir, n));
  }
  ::closedir(d);
  return out;
}

void RecordLoss(const std::string& trial, const std::string& worker, int64_t lost,
                int64_t first_lost, const std::string& why) {
  const std::string path = JoinPath(trial, trial_format::IncompleteMarkerPath(worker));
  nlohmann::json j = nlohmann::json::object();
  std::string old;
  auto sz = RegularSize(path);
  if (sz.ok() && *sz > 0 && *sz <= 65536 && ReadSmallFile(path, *sz, &old).ok()) {
    j = nlohmann::json::parse(old, nullptr, false);
    if (!j.is_object()) j = nlohmann::json::object();
  }
  auto int_of = [&](const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
  };
  j["worker"] = worker;
  j["final"] = true;
  j["steps_failed"] = int_of("steps_failed") + lost;
  if (!j.contains("steps_dropped")) j["steps_dropped"] = 0;
  const int64_t prev = j.contains("first_lost_step") ? int_of("first_lost_step") : -1;
  j["first_lost_step"] = prev >= 0 ? std::min(prev, first_lost) : first_lost;
  if (!j.contains("first_error") || !j["first_error"].is_string()) {
    j["first_error"] = "recovery of the journal: " + why;
  }
  // Best effort: the caller also lists the loss in the RecoveryReport's problems.
  (void)Env::Default()->WriteFileAtomic(
      path, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", false);
}

}  // namespace

void RecoverWorkerLocked(const std::string& trial, const std::string& worker, int log_fd,
                         RecoveryReport* report) {
  const std::string log_path = jf::LogPath(trial, worker);
  std::vector<Entry> entries;
  struct stat st {};
  if (::fstat(log_fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    std::string log;
    const size_t n = std::min<uint64_t>(static_cast<uint64_t>(st.st_size), jf::kLogBytes);
    Status s = ReadAt(log_fd, 0, n, &log, log_path);
    if (!s.ok()) {
      report->problems.push_back(worker + ": " + s.ToString());
    } else {
      for (size_t off = 0; off + jf::kEntrySize <= log.size(); off += jf::kEntrySize) {
        Entry e;
        if (DecodeEntry(log.data() + off, &e)) entries.push_back(e);
      }
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
  int64_t lost = 0, first_lost = -1;
  std::string first_why;
  // The valid entries are consecutive numbers (the ring holds the latest 256); a gap means a
  // damaged entry, after which no step may be published (it would leave a hole).
  bool gap = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (i > 0 && e.seq != entries[i - 1].seq + 1) gap = true;
    if (e.state != jf::kSealed) continue;
    std::string why;
    if (gap && lost == 0) {
      why = "not published: the commit log misses the entry before it (damaged)";
    } else if (lost > 0) {
      why = "not published: an earlier step of the journal was damaged";
    } else {
      bool before = false;
      Status s = RecoverStep(trial, worker, e, &before);
      if (s.ok()) {
        if (!before) ++report->steps_recovered;
        continue;
      }
      why = s.ToString();
    }
    if (lost == 0) {
      first_lost = e.step;
      first_why = "step " + std::to_string(e.step) + ": " + why;
    }
    ++lost;
    report->problems.push_back(worker + " step " + std::to_string(e.step) + ": " + why);
  }
  report->steps_lost += lost;
  for (const std::string& p : SlotFiles(trial, worker)) {
    if (::unlink(p.c_str()) == 0) ++report->slots_removed;
  }
  if (lost > 0) RecordLoss(trial, worker, lost, first_lost, first_why);
  // Recovered: the caller unlinks the log next anyway. (A result cast to void still warns under
  // _FORTIFY_SOURCE, which distributions' compilers turn on.)
  [[maybe_unused]] const int truncated = ::ftruncate(log_fd, 0);
}

// ----- JournalSlot

JournalSlot::~JournalSlot() {
  if (base_ != nullptr) ::munmap(base_, jf::kSlotMapBytes);
  if (fd_ >= 0) ::close(fd_);
}

Status JournalSlot::Ensure(size_t n) {
  if (n <= reserved_) return Status::OK();
  if (n > jf::kSlotMapBytes) {
    return Status::OutOfRange("a step of " + std::to_string(n) +
                              " bytes is larger than the "
                              "journal's largest step (" +
                              std::to_string(jf::kSlotMapBytes) +
                              " bytes); save fewer tensors per step");
  }
  // Double (few system calls for a growing step), in whole multiples of kMinGrowth.
  size_t want = std::max({n, 2 * reserved_, jf::kMinGrowth});
  want = (want + jf::kMinGrowth - 1) / jf::kMinGrowth * jf::kMinGrowth;
  want = std::min(want, jf::kSlotMapBytes);
  auto reserve = [&](size_t upto) {
    int r;
    do {
      r = ::fallocate(fd_, 0, static_cast<off_t>(reserved_), static_cast<off_t>(upto - reserved_));
    } while (r != 0 && errno == EINTR);
    return r;
  };
  int r = reserve(want);
  if (r != 0 && want > n && errno != EOPNOTSUPP) {
    want = n;  // no room (or over a file-size limit) for the doubling: the step may still fit
    r = reserve(want);
  }
  if (r != 0) {
    if (errno == EOPNOTSUPP) {
      return Status::NotSupported("the file system of " + path_ + " has no fallocate");
    }
    return Status::FromErrno("reserve " + std::to_string(want) + " bytes for", path_, errno);
  }
  reserved_ = want;
  return Status::OK();
}

Status JournalSlot::Sync() {
  if (::fdatasync(fd_) != 0) return Status::FromErrno("fdatasync", path_, errno);
  return Status::OK();
}

Status JournalSlot::TruncateAndRename(uint64_t size, const std::string& to) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    return Status::FromErrno("truncate", path_, errno);
  }
  if (::rename(path_.c_str(), to.c_str()) != 0) {
    return Status::FromErrno("rename to " + to, path_, errno);
  }
  moved_ = true;
  return Status::OK();
}

void JournalSlot::Remove() {
  if (!moved_) (void)::unlink(path_.c_str());  // a leftover slot is removed by recovery
  moved_ = true;
}

// ----- Journal

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& trial_dir,
                                               const std::string& worker, RecoveryReport* report) {
  RecoveryReport ignored;
  if (report == nullptr) report = &ignored;
  const std::string dir = jf::JournalDir(trial_dir);
  TS_RETURN_IF_ERROR(EnsureFolder(trial_dir, dir));
  const std::string log_path = jf::LogPath(trial_dir, worker);
  std::unique_ptr<Journal> j(new Journal());
  j->trial_dir_ = trial_dir;
  j->worker_ = worker;
  j->lock_fd_ = ::open(log_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (j->lock_fd_ < 0) return Status::FromErrno("open", log_path, errno);
  if (::flock(j->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Status::Aborted("worker " + worker + " of " + trial_dir +
                             " is being written by another live process (it holds the lock on " +
                             log_path + "); give this training another out_dir or worker name");
    }
    return Status::FromErrno("lock", log_path, errno);
  }
  RecoverWorkerLocked(trial_dir, worker, j->lock_fd_, report);
  if (::ftruncate(j->lock_fd_, static_cast<off_t>(jf::kLogBytes)) != 0) {
    return Status::FromErrno("size", log_path, errno);
  }
  void* p = ::mmap(nullptr, jf::kLogBytes, PROT_READ | PROT_WRITE, MAP_SHARED, j->lock_fd_, 0);
  if (p == MAP_FAILED)
    return Status::NotSupported("cannot map " + log_path + ": " + std::strerror(errno));
  j->log_ = static_cast<char*>(p);
  // A first slot now: proves fallocate and the mapping work here, and serves the first step.
  TS_ASSIGN_OR_RETURN(std::unique_ptr<JournalSlot> first,
                      j->CreateSlot(jf::kMinGrowth, /*populate=*/true));
  {
    MutexLock l(&j->prepared_mu_);
    j->prepared_ = std::move(first);
  }
  return j;
}

Journal::~Journal() {
  {
    MutexLock l(&prepared_mu_);
    if (prepared_) prepared_->Remove();
    prepared_.reset();
  }
  if (log_ != nullptr) ::munmap(log_, jf::kLogBytes);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<std::unique_ptr<JournalSlot>> Journal::CreateSlot(size_t reserve, bool populate) {
  std::unique_ptr<JournalSlot> s(new JournalSlot());
  s->id_ = next_id_.fetch_add(1);
  s->path_ = jf::SlotPath(trial_dir_, worker_, s->id_);
  s->fd_ = ::open(s->path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (s->fd_ < 0) return Status::FromErrno("create", s->path_, errno);
  void* p = ::mmap(nullptr, jf::kSlotMapBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                   s->fd_, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    s->Remove();
    return Status::NotSupported("cannot map the journal file " + s->path_ + ": " +
                                std::strerror(err));
  }
  s->base_ = static_cast<char*>(p);
  Status st = s->Ensure(reserve);
  if (!st.ok()) {
    s->Remove();
    return st;
  }
  // A hint only (kernels before 5.14 refuse it): pages then fault in on first write.
  if (populate) (void)::madvise(s->base_, s->reserved_, MADV_POPULATE_WRITE);
  return s;
}

Result<std::unique_ptr<JournalSlot>> Journal::NewSlot(size_t reserve) {
  {
    MutexLock l(&prepared_mu_);
    if (prepared_) return std::move(prepared_);
  }
  return CreateSlot(reserve, /*populate=*/false);
}

void Journal::Prepare(size_t reserve) {
  {
    MutexLock l(&prepared_mu_);
    if (prepared_) return;
  }
  auto s = CreateSlot(reserve, /*populate=*/true);
  if (!s.ok()) return;  // the training thread will try (and report) itself
  MutexLock l(&prepared_mu_);
  if (!prepared_) {
    prepared_ = std::move(*s);
  } else {
    (*s)->Remove();
  }
}

Result<uint64_t> Journal::Seal(JournalSlot* slot, int64_t step, uint64_t event_size,
                               std::string_view json) {
  TS_RETURN_IF_ERROR(slot->Ensure(event_size + json.size()));
  std::memcpy(slot->data() + event_size, json.data(), json.size());
  const uint64_t seq = next_seq_++;
  char buf[jf::kEntrySize] = {};
  PutU64(buf + 8, seq);
  PutU64(buf + 16, static_cast<uint64_t>(step));
  PutU64(buf + 24, event_size);
  PutU32(buf + 32, static_cast<uint32_t>(json.size()));
  PutU32(buf + 36, crc32c::Value(json.data(), json.size()));
  PutU64(buf + 40, slot->id());
  PutU32(buf + 60, crc32c::Value(buf + 8, 52));
  char* e = log_ + (seq % jf::kEntries) * jf::kEntrySize;
  __atomic_store_n(reinterpret_cast<uint32_t*>(e), 0u, __ATOMIC_RELAXED);
  std::memcpy(e + 8, buf + 8, jf::kEntrySize - 8);
  __atomic_store_n(reinterpret_cast<uint32_t*>(e + 4), jf::kSealed, __ATOMIC_RELEASE);
  __atomic_store_n(reinterpret_cast<uint32_t*>(e), jf::kMagic, __ATOMIC_RELEASE);
  return seq;
}

void Journal::SetState(uint64_t seq, uint32_t state) {
  char* e = log_ + (seq % jf::kEntries) * jf::kEntrySize;
  if (GetU64(e + 8) != seq) return;
  __atomic_store_n(reinterpret_cast<uint32_t*>(e + 4), state, __ATOMIC_RELEASE);
}

void Journal::RemoveFiles() {
  {
    MutexLock l(&prepared_mu_);
    if (prepared_) prepared_->Remove();
    prepared_.reset();
  }
  if (log_ != nullptr) std::memset(log_, 0, jf::kLogBytes);
  (void)::unlink(jf::LogPath(trial_dir_, worker_).c_str());  // zeroed above: a leftover is empty
  (void)::rmdir(jf::JournalDir(trial_dir_).c_str());         // only when empty (other workers)
}

// ----- RecoverTrial

Result<RecoveryReport> RecoverTrial(const std::string& dir) {
  RecoveryReport report;
  const std::string jdir = jf::JournalDir(dir);
  struct stat st {};
  if (::lstat(jdir.c_str(), &st) != 0) {
    if (errno == ENOENT) return report;
    return Status::FromErrno("stat", jdir, errno);
  }
  TS_RETURN_IF_ERROR(CheckNoLinkBelow(dir, jdir));
  if (!S_ISDIR(st.st_mode)) return Status::Corruption(jdir + " is not a folder");
  DIR* d = ::opendir(jdir.c_str());
  if (d == nullptr) return Status::FromErrno("list", jdir, errno);
  std::vector<std::string> workers;
  while (dirent* ent = ::readdir(d)) {
    std::string_view n = ent->d_name;
    if (n.size() > 4 && n.substr(n.size() - 4) == ".log") {
      workers.emplace_back(n.substr(0, n.size() - 4));
    }
  }
  ::closedir(d);
  std::sort(workers.begin(), workers.end());
  for (const std::string& w : workers) {
    const std::string log_path = jf::LogPath(dir, w);
    int fd = ::open(log_path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      report.problems.push_back(w + ": " + Status::FromErrno("open", log_path, errno).ToString());
      continue;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      report.workers_in_use.push_back(w);
      ::close(fd);
      continue;
    }
    RecoverWorkerLocked(dir, w, fd, &report);
    (void)::unlink(log_path.c_str());  // emptied by the recovery: a leftover is harmless
    ::close(fd);
  }
  (void)::rmdir(jdir.c_str());  // only when empty: logs in use stay
  return report;
}

}  // namespace trainscope
