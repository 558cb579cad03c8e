// Env: every file-system access trainscope makes goes through this interface, so tests can run
// against an in-memory file system or inject faults (a full disk, a failing fsync).
//
// Implementations: Env::Default() (POSIX), NewMemEnv() (in memory), FaultInjectionEnv (wraps
// another Env and fails chosen operations). Paths are plain strings joined with '/'.
// Thread safety: every Env method may be called from any thread concurrently. A WritableFile is
// used by one thread at a time. A FileRegion is immutable and thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/status.h"

namespace trainscope {

// A file opened for writing from its start (truncating it).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  virtual Status Flush() = 0;  // hand buffered bytes to the OS
  virtual Status Sync() = 0;   // durable on disk (fdatasync)
  virtual Status Close() = 0;  // idempotent; flushes
  // Bytes appended so far.
  virtual uint64_t Size() const = 0;
};

// Immutable bytes of a whole file: a memory map (POSIX) or a shared buffer (MemEnv).
class FileRegion {
 public:
  virtual ~FileRegion() = default;
  virtual const char* data() const = 0;
  virtual size_t size() const = 0;
  std::string_view view() const { return {data(), size()}; }
};

// One change seen by a ChangeNotifier: a file created in, or moved into, a watched folder.
struct DirChange {
  std::string dir;   // the watched folder, as given to Watch
  std::string name;  // the entry's name inside it
  bool is_dir = false;
};

// Reports files appearing in watched folders (inotify on Linux).
// Thread safety: Watch and Wait are called by one thread.
class ChangeNotifier {
 public:
  virtual ~ChangeNotifier() = default;
  virtual Status Watch(const std::string& dir) = 0;
  // Blocks until at least one change or `timeout`; appends what happened to *out.
  // Returns Unavailable if events were dropped (queue overflow): the caller must re-list.
  virtual Status Wait(std::chrono::milliseconds timeout, std::vector<DirChange>* out) = 0;
};

// ReadFile's OutOfRange for a file of `size` bytes over `max_bytes` (for Env implementations).
Status FileTooLarge(const std::string& path, uint64_t size, uint64_t max_bytes);

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide POSIX Env. Never deleted.
  static Env* Default();

  // Creates or truncates the file at `path`; IOError when `path` is a symbolic link (POSIX:
  // O_NOFOLLOW; a link planted at a temporary name is never written through).
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Appends to an existing file or creates it.
  virtual Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;
  // Maps (or loads) the whole file. The region stays valid after the file is renamed or removed.
  virtual Result<std::shared_ptr<const FileRegion>> MapFile(const std::string& path) = 0;
  // Reads n bytes at offset; fewer only at end of file.
  virtual Result<std::string> ReadRange(const std::string& path, uint64_t offset, size_t n);
  // The whole file. OutOfRange naming the file and its size when it is larger than max_bytes
  // (judged by its size before anything is read).
  static constexpr uint64_t kNoSizeLimit = ~uint64_t{0};
  virtual Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes = kNoSizeLimit);
  Status WriteFileAtomic(const std::string& path, std::string_view data, bool sync);

  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // mkdir -p. OK if it exists.
  virtual Status CreateDirs(const std::string& path) = 0;
  // Names (not paths) of the entries of `dir`, unsorted, without "." and "..".
  virtual Result<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  virtual bool IsDirectory(const std::string& path) = 0;
  virtual Result<uint64_t> GetFileSize(const std::string& path) = 0;
  // When the file was last written, in microseconds since the epoch (the clock of NowMicros();
  // a file system on another machine has that machine's clock). NotSupported where unknown.
  virtual Result<uint64_t> GetModificationMicros(const std::string& path) {
    (void)path;
    return Status::NotSupported("this Env does not keep modification times");
  }
  // fsync of a folder, so a rename inside it is durable. No-op where meaningless.
  virtual Status SyncDir(const std::string& dir) = 0;
  // Creates `path` exclusively (O_CREAT|O_EXCL); AlreadyExists is reported as kAborted.
  virtual Status CreateExclusive(const std::string& path) = 0;
  // Gives the file `from` the second name `to` (a hard link) unless `to` exists, which is
  // reported as kAborted: of several callers racing for one `to`, exactly one succeeds, and `to`
  // appears whole. kNotSupported where the file system has no hard links.
  virtual Status LinkFile(const std::string& from, const std::string& to) = 0;
  // NotSupported where the Env cannot watch (then callers poll).
  virtual Result<std::unique_ptr<ChangeNotifier>> NewChangeNotifier() {
    return Status::NotSupported("this Env cannot watch folders");
  }
  virtual uint64_t NowMicros();
};

// An Env whose files live in memory. Thread-safe.
std::unique_ptr<Env> NewMemEnv();

// Wraps `base` (not owned) and fails operations on demand. Thread-safe.
class FaultInjectionEnv : public Env {
 public:
  explicit FaultInjectionEnv(Env* base) : base_(base) {}

  // After `bytes` more bytes are appended (over all files), every Append fails with ENOSPC
  // ("No space left on device"). Negative disables.
  void SetDiskSpaceLeft(int64_t bytes);
  void SetSyncFails(bool fails);    // Sync/SyncDir fail with EIO
  void SetRenameFails(bool fails);  // RenameFile and LinkFile fail with EIO
  void SetCreateFails(bool fails);  // NewWritableFile/NewAppendableFile fail with EACCES
  int64_t failures() const;         // how many operations failed on purpose so far

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  Result<std::shared_ptr<const FileRegion>> MapFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status RemoveFile(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override;
  bool FileExists(const std::string& path) override;
  bool IsDirectory(const std::string& path) override;
  Result<uint64_t> GetFileSize(const std::string& path) override;
  Result<uint64_t> GetModificationMicros(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  Status CreateExclusive(const std::string& path) override;
  Status LinkFile(const std::string& from, const std::string& to) override;
  Result<std::unique_ptr<ChangeNotifier>> NewChangeNotifier() override {
    return base_->NewChangeNotifier();
  }

 private:
  class File;
  Env* base_;
  std::shared_ptr<struct FaultState> state_ = MakeState();
  static std::shared_ptr<struct FaultState> MakeState();
};

// Path helpers.
std::string JoinPath(std::string_view a, std::string_view b);
std::string_view Dirname(std::string_view path);
std::string_view Basename(std::string_view path);

}  // namespace trainscope
