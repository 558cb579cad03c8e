// The POSIX Env: plain syscalls, memory maps for reads, inotify for watching folders.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "trainscope/env.h"

namespace trainscope {
namespace {

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override { (void)Close(); }  // no one to report to: callers Close() first

  Status Append(std::string_view data) override {
    if (data.size() < kBufferSize - buf_.size()) {
      buf_.append(data);
      size_ += data.size();
      return Status::OK();
    }
    TS_RETURN_IF_ERROR(FlushBuffer());
    size_ += data.size();
    if (data.size() < kBufferSize) {
      buf_.append(data);
      return Status::OK();
    }
    return WriteRaw(data.data(), data.size());
  }
  Status Flush() override { return FlushBuffer(); }
  Status Sync() override {
    TS_RETURN_IF_ERROR(FlushBuffer());
    if (::fdatasync(fd_) != 0) return Status::FromErrno("fdatasync", path_, errno);
    return Status::OK();
  }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    Status s = FlushBuffer();
    if (::close(fd_) != 0 && s.ok()) s = Status::FromErrno("close", path_, errno);
    fd_ = -1;
    return s;
  }
  uint64_t Size() const override { return size_; }

 private:
  static constexpr size_t kBufferSize = 1 << 16;

  Status FlushBuffer() {
    if (buf_.empty()) return Status::OK();
    Status s = WriteRaw(buf_.data(), buf_.size());
    buf_.clear();
    return s;
  }
  Status WriteRaw(const char* p, size_t n) {
    if (fd_ < 0) return Status::Aborted("write to closed file " + path_);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno("write", path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return Status::OK();
  }

  std::string path_;
  int fd_;
  uint64_t size_;
  std::string buf_;
};

class MappedRegion final : public FileRegion {
 public:
  MappedRegion(void* base, size_t size) : base_(base), size_(size) {}
  ~MappedRegion() override {
    if (base_ != nullptr && size_ > 0) ::munmap(base_, size_);
  }
  const char* data() const override { return static_cast<const char*>(base_); }
  size_t size() const override { return size_; }

 private:
  void* base_;
  size_t size_;
};

class InotifyNotifier final : public ChangeNotifier {
 public:
  explicit InotifyNotifier(int fd) : fd_(fd) {}
  ~InotifyNotifier() override { ::close(fd_); }

  Status Watch(const std::string& dir) override {
    int wd = ::inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
    if (wd < 0) return Status::FromErrno("inotify_add_watch", dir, errno);
    dirs_[wd] = dir;
    return Status::OK();
  }

  Status Wait(std::chrono::milliseconds timeout, std::vector<DirChange>* out) override {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (r < 0) {
      if (errno == EINTR) return Status::OK();
      return Status::FromErrno("poll", "inotify", errno);
    }
    if (r == 0) return Status::OK();
    alignas(inotify_event) char buf[64 * 1024];
    bool overflow = false;
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n <= 0) break;
      for (char* q = buf; q < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(q);
        q += sizeof(inotify_event) + ev->len;
        if (ev->mask & IN_Q_OVERFLOW) {
          overflow = true;
          continue;
        }
        auto it = dirs_.find(ev->wd);
        if (it == dirs_.end() || ev->len == 0) continue;
        out->push_back({it->second, std::string(ev->name), (ev->mask & IN_ISDIR) != 0});
      }
      pollfd again{fd_, POLLIN, 0};
      if (::poll(&again, 1, 0) <= 0) break;
    }
    if (overflow) return Status::Unavailable("inotify queue overflowed; re-list the folders");
    return Status::OK();
  }

 private:
  int fd_;
  std::unordered_map<int, std::string> dirs_;
};

// Opens `path` for reading, refusing anything but a regular file (a symlink to one is
// followed): opened O_NONBLOCK, so a FIFO is neither waited on (open would block until a writer
// came) nor read for ever, and a device such as /dev/zero is not read without end. Readers of
// trials, statuses and stop files all come through here. `size`, if given: the file's size.
Result<int> OpenRegularForRead(const std::string& path, uint64_t* size = nullptr) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::FromErrno("open", path, errno);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = Status::FromErrno("stat", path, errno);
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISFIFO(st.st_mode)                         ? "a FIFO"
                       : S_ISDIR(st.st_mode)                        ? "a folder"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode)                       ? "a socket"
                                                                    : "not a regular file";
    return Status::IOError(path + " is " + what +
                           ", not a regular file: trainscope reads only regular files (remove or "
                           "replace it)");
  }
  // Regular files ignore O_NONBLOCK; cleared all the same so reads are plain blocking reads.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (size != nullptr) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

// stat(2) of `path`: NotFound naming it when it does not exist.
Result<struct stat> Stat(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::FromErrno("stat", path, errno);
  }
  return st;
}

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    // O_NOFOLLOW: every file trainscope writes is its own (a temporary name, then a rename); a
    // symbolic link planted at that name is refused, never truncated and written through.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno == ELOOP) {
      return Status::IOError(path +
                             " is a symbolic link: trainscope writes no file through a "
                             "link; remove it");
    }
    if (fd < 0) return Status::FromErrno("open", path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, 0));
  }

  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno("open", path, errno);
    struct stat st;
    uint64_t size = (::fstat(fd, &st) == 0) ? static_cast<uint64_t>(st.st_size) : 0;
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, size));
  }

  Result<std::shared_ptr<const FileRegion>> MapFile(const std::string& path) override {
    uint64_t file_size = 0;
    TS_ASSIGN_OR_RETURN(int fd, OpenRegularForRead(path, &file_size));
    size_t size = static_cast<size_t>(file_size);
    void* base = nullptr;
    if (size > 0) {
      base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED) {
        Status s = Status::FromErrno("mmap", path, errno);
        ::close(fd);
        return s;
      }
    }
    ::close(fd);
    return std::shared_ptr<const FileRegion>(std::make_shared<MappedRegion>(base, size));
  }

  Result<std::string> ReadRange(const std::string& path, uint64_t offset, size_t n) override {
    TS_ASSIGN_OR_RETURN(int fd, OpenRegularForRead(path));
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        Status s = Status::FromErrno("read", path, errno);
        ::close(fd);
        return s;
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    ::close(fd);
    out.resize(got);
    return out;
  }

  // One open and reads to the end of that file, so a file replaced (renamed over) meanwhile is
  // read whole, old or new, never a mix.
  Result<std::string> ReadFile(const std::string& path,
                               uint64_t max_bytes = kNoSizeLimit) override {
    uint64_t size = 0;
    TS_ASSIGN_OR_RETURN(int fd, OpenRegularForRead(path, &size));
    if (size > max_bytes) {
      ::close(fd);
      return FileTooLarge(path, size, max_bytes);
    }
    std::string out;
    char buf[64 * 1024];
    for (;;) {
      ssize_t r = ::read(fd, buf, sizeof(buf));
      if (r < 0) {
        if (errno == EINTR) continue;
        Status s = Status::FromErrno("read", path, errno);
        ::close(fd);
        return s;
      }
      if (r == 0) break;
      out.append(buf, static_cast<size_t>(r));
    }
    ::close(fd);
    return out;
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return Status::FromErrno("rename", from, errno);
    return Status::OK();
  }
  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return Status::NotFound("no such file: " + path);
      return Status::FromErrno("unlink", path, errno);
    }
    return Status::OK();
  }
  Status CreateDirs(const std::string& path) override {
    if (path.empty()) return Status::OK();
    if (::mkdir(path.c_str(), 0755) == 0) return Status::OK();
    if (errno == EEXIST) {
      if (IsDirectory(path)) return Status::OK();
      return Status::IOError("mkdir " + path + ": exists and is not a folder");
    }
    if (errno != ENOENT) return Status::FromErrno("mkdir", path, errno);
    std::string parent(Dirname(path));
    if (parent == path) return Status::FromErrno("mkdir", path, ENOENT);
    TS_RETURN_IF_ERROR(CreateDirs(parent));
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FromErrno("mkdir", path, errno);
    }
    return Status::OK();
  }
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return Status::NotFound("no such folder: " + dir);
      return Status::FromErrno("opendir", dir, errno);
    }
    std::vector<std::string> out;
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      out.emplace_back(e->d_name);
    }
    ::closedir(d);
    return out;
  }
  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    TS_ASSIGN_OR_RETURN(struct stat st, Stat(path));
    return static_cast<uint64_t>(st.st_size);
  }
  Result<uint64_t> GetModificationMicros(const std::string& path) override {
    TS_ASSIGN_OR_RETURN(struct stat st, Stat(path));
    if (st.st_mtim.tv_sec < 0) {
      return Status::NotSupported("modification time before 1970: " + path);
    }
    return static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000u +
           static_cast<uint64_t>(st.st_mtim.tv_nsec) / 1000u;
  }
  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno("open", dir, errno);
    Status s;
    if (::fsync(fd) != 0) s = Status::FromErrno("fsync", dir, errno);
    ::close(fd);
    return s;
  }
  Status CreateExclusive(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) return Status::Aborted(path + " already exists");
      return Status::FromErrno("create", path, errno);
    }
    ::close(fd);
    return Status::OK();
  }
  Status LinkFile(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) == 0) return Status::OK();
    if (errno == EEXIST) return Status::Aborted(to + " already exists");
    if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS) {
      return Status::NotSupported("link " + from + " " + to +
                                  ": the file system has no hard links (" + std::strerror(errno) +
                                  ")");
    }
    return Status::FromErrno("link", to, errno);
  }
  Result<std::unique_ptr<ChangeNotifier>> NewChangeNotifier() override {
    int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) return Status::FromErrno("inotify_init1", "", errno);
    return std::unique_ptr<ChangeNotifier>(new InotifyNotifier(fd));
  }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

}  // namespace trainscope
