// An Env whose files live in memory, for tests.
#include <map>
#include <set>

#include "trainscope/env.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {
namespace {

using Contents = std::shared_ptr<std::string>;

struct MemFs {
  Mutex mu;  // guards the fields below and the bytes of every Contents
  std::map<std::string, Contents> files TS_GUARDED_BY(mu);  // path -> bytes
  std::set<std::string> dirs TS_GUARDED_BY(mu){"/", "."};
};

std::string Normalize(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

class MemWritableFile final : public WritableFile {
 public:
  MemWritableFile(std::shared_ptr<MemFs> fs, std::string path, Contents c)
      : fs_(std::move(fs)), path_(std::move(path)), contents_(std::move(c)) {}
  Status Append(std::string_view data) override {
    if (closed_) return Status::Aborted("write to closed file " + path_);
    MutexLock l(&fs_->mu);
    contents_->append(data);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Sync() override { return Status::OK(); }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  uint64_t Size() const override {
    MutexLock l(&fs_->mu);
    return contents_->size();
  }

 private:
  std::shared_ptr<MemFs> fs_;
  std::string path_;
  Contents contents_;
  bool closed_ = false;
};

class StringRegion final : public FileRegion {
 public:
  explicit StringRegion(std::string s) : s_(std::move(s)) {}
  const char* data() const override { return s_.data(); }
  size_t size() const override { return s_.size(); }

 private:
  std::string s_;
};

class MemEnv final : public Env {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return Open(path, /*truncate=*/true);
  }
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return Open(path, /*truncate=*/false);
  }
  Result<std::shared_ptr<const FileRegion>> MapFile(const std::string& path) override {
    MutexLock l(&fs_->mu);
    auto it = fs_->files.find(Normalize(path));
    if (it == fs_->files.end()) return Status::NotFound("no such file: " + path);
    // A snapshot: later appends do not change a region already handed out.
    return std::shared_ptr<const FileRegion>(std::make_shared<StringRegion>(*it->second));
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    MutexLock l(&fs_->mu);
    auto it = fs_->files.find(Normalize(from));
    if (it == fs_->files.end()) return Status::NotFound("rename: no such file: " + from);
    if (!HasDirLocked(std::string(Dirname(Normalize(to))))) {
      return Status::IOError("rename " + from + ": No such file or directory (errno 2)");
    }
    Contents c = it->second;
    fs_->files.erase(it);
    fs_->files[Normalize(to)] = std::move(c);
    return Status::OK();
  }
  Status RemoveFile(const std::string& path) override {
    MutexLock l(&fs_->mu);
    if (fs_->files.erase(Normalize(path)) == 0) return Status::NotFound("no such file: " + path);
    return Status::OK();
  }
  Status CreateDirs(const std::string& path) override {
    MutexLock l(&fs_->mu);
    std::string p = Normalize(path);
    while (!p.empty() && p != "/" && p != ".") {
      if (fs_->files.count(p)) return Status::IOError("mkdir " + p + ": exists and is a file");
      fs_->dirs.insert(p);
      std::string parent(Dirname(p));
      if (parent == p) break;
      p = parent;
    }
    return Status::OK();
  }
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    MutexLock l(&fs_->mu);
    std::string d = Normalize(dir);
    if (!HasDirLocked(d)) return Status::NotFound("no such folder: " + dir);
    std::string prefix = d == "/" ? "/" : d + "/";
    std::set<std::string> names;
    auto collect = [&](const std::string& p) {
      if (p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0) {
        std::string rest = p.substr(prefix.size());
        names.insert(rest.substr(0, rest.find('/')));
      }
    };
    for (const auto& [p, c] : fs_->files) collect(p);
    for (const auto& p : fs_->dirs) collect(p);
    return std::vector<std::string>(names.begin(), names.end());
  }
  bool FileExists(const std::string& path) override {
    MutexLock l(&fs_->mu);
    std::string p = Normalize(path);
    return fs_->files.count(p) > 0 || fs_->dirs.count(p) > 0;
  }
  bool IsDirectory(const std::string& path) override {
    MutexLock l(&fs_->mu);
    return HasDirLocked(Normalize(path));
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    MutexLock l(&fs_->mu);
    auto it = fs_->files.find(Normalize(path));
    if (it == fs_->files.end()) return Status::NotFound("no such file: " + path);
    return static_cast<uint64_t>(it->second->size());
  }
  Status SyncDir(const std::string&) override { return Status::OK(); }
  Status CreateExclusive(const std::string& path) override {
    MutexLock l(&fs_->mu);
    std::string p = Normalize(path);
    if (fs_->files.count(p)) return Status::Aborted(path + " already exists");
    fs_->files[p] = std::make_shared<std::string>();
    return Status::OK();
  }
  Status LinkFile(const std::string& from, const std::string& to) override {
    MutexLock l(&fs_->mu);
    auto it = fs_->files.find(Normalize(from));
    if (it == fs_->files.end()) {
      return Status::IOError("link " + from + ": No such file or directory (errno 2)");
    }
    std::string p = Normalize(to);
    if (fs_->files.count(p) || fs_->dirs.count(p)) return Status::Aborted(to + " already exists");
    if (!HasDirLocked(std::string(Dirname(p)))) {
      return Status::IOError("link " + to + ": No such file or directory (errno 2)");
    }
    fs_->files[p] = it->second;  // one file, two names
    return Status::OK();
  }

 private:
  bool HasDirLocked(const std::string& d) TS_REQUIRES(fs_->mu) { return fs_->dirs.count(d) > 0; }

  Result<std::unique_ptr<WritableFile>> Open(const std::string& path, bool truncate) {
    MutexLock l(&fs_->mu);
    std::string p = Normalize(path);
    if (!HasDirLocked(std::string(Dirname(p)))) {
      return Status::IOError("open " + path + ": No such file or directory (errno 2)");
    }
    auto& slot = fs_->files[p];
    if (!slot || truncate) slot = std::make_shared<std::string>();
    return std::unique_ptr<WritableFile>(new MemWritableFile(fs_, p, slot));
  }

  std::shared_ptr<MemFs> fs_ = std::make_shared<MemFs>();
};

}  // namespace

std::unique_ptr<Env> NewMemEnv() { return std::make_unique<MemEnv>(); }

}  // namespace trainscope
