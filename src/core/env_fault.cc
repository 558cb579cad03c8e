// FaultInjectionEnv: forwards to a base Env and fails chosen operations.
#include <errno.h>

#include <atomic>

#include "trainscope/env.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

struct FaultState {
  Mutex mu;
  int64_t space_left TS_GUARDED_BY(mu) = -1;  // bytes; negative = unlimited
  std::atomic<bool> sync_fails{false};
  std::atomic<bool> rename_fails{false};
  std::atomic<bool> create_fails{false};
  std::atomic<int64_t> failures{0};

  // Consumes n bytes of space or fails with ENOSPC.
  Status Consume(const std::string& path, size_t n) TS_EXCLUDES(mu) {
    MutexLock l(&mu);
    if (space_left < 0) return Status::OK();
    if (static_cast<int64_t>(n) > space_left) {
      space_left = 0;
      ++failures;
      return Status::FromErrno("write", path, ENOSPC);
    }
    space_left -= static_cast<int64_t>(n);
    return Status::OK();
  }
};

std::shared_ptr<FaultState> FaultInjectionEnv::MakeState() {
  return std::make_shared<FaultState>();
}

class FaultInjectionEnv::File final : public WritableFile {
 public:
  File(std::unique_ptr<WritableFile> base, std::string path, std::shared_ptr<FaultState> st)
      : base_(std::move(base)), path_(std::move(path)), st_(std::move(st)) {}
  Status Append(std::string_view data) override {
    TS_RETURN_IF_ERROR(st_->Consume(path_, data.size()));
    return base_->Append(data);
  }
  Status Flush() override { return base_->Flush(); }
  Status Sync() override {
    if (st_->sync_fails) {
      ++st_->failures;
      return Status::FromErrno("fdatasync", path_, EIO);
    }
    return base_->Sync();
  }
  Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }

 private:
  std::unique_ptr<WritableFile> base_;
  std::string path_;
  std::shared_ptr<FaultState> st_;
};

void FaultInjectionEnv::SetDiskSpaceLeft(int64_t bytes) {
  MutexLock l(&state_->mu);
  state_->space_left = bytes;
}
void FaultInjectionEnv::SetSyncFails(bool fails) { state_->sync_fails = fails; }
void FaultInjectionEnv::SetRenameFails(bool fails) { state_->rename_fails = fails; }
void FaultInjectionEnv::SetCreateFails(bool fails) { state_->create_fails = fails; }
int64_t FaultInjectionEnv::failures() const { return state_->failures; }

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(const std::string& path) {
  if (state_->create_fails) {
    ++state_->failures;
    return Status::FromErrno("open", path, EACCES);
  }
  TS_ASSIGN_OR_RETURN(auto f, base_->NewWritableFile(path));
  return std::unique_ptr<WritableFile>(new File(std::move(f), path, state_));
}
Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewAppendableFile(
    const std::string& path) {
  if (state_->create_fails) {
    ++state_->failures;
    return Status::FromErrno("open", path, EACCES);
  }
  TS_ASSIGN_OR_RETURN(auto f, base_->NewAppendableFile(path));
  return std::unique_ptr<WritableFile>(new File(std::move(f), path, state_));
}
Result<std::shared_ptr<const FileRegion>> FaultInjectionEnv::MapFile(const std::string& path) {
  return base_->MapFile(path);
}
Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  if (state_->rename_fails) {
    ++state_->failures;
    return Status::FromErrno("rename", from, EIO);
  }
  return base_->RenameFile(from, to);
}
Status FaultInjectionEnv::RemoveFile(const std::string& path) { return base_->RemoveFile(path); }
Status FaultInjectionEnv::CreateDirs(const std::string& path) { return base_->CreateDirs(path); }
Result<std::vector<std::string>> FaultInjectionEnv::GetChildren(const std::string& dir) {
  return base_->GetChildren(dir);
}
bool FaultInjectionEnv::FileExists(const std::string& path) { return base_->FileExists(path); }
bool FaultInjectionEnv::IsDirectory(const std::string& path) { return base_->IsDirectory(path); }
Result<uint64_t> FaultInjectionEnv::GetFileSize(const std::string& path) {
  return base_->GetFileSize(path);
}

Result<uint64_t> FaultInjectionEnv::GetModificationMicros(const std::string& path) {
  return base_->GetModificationMicros(path);
}
Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  if (state_->sync_fails) {
    ++state_->failures;
    return Status::FromErrno("fsync", dir, EIO);
  }
  return base_->SyncDir(dir);
}
Status FaultInjectionEnv::CreateExclusive(const std::string& path) {
  return base_->CreateExclusive(path);
}
Status FaultInjectionEnv::LinkFile(const std::string& from, const std::string& to) {
  if (state_->rename_fails) {
    ++state_->failures;
    return Status::FromErrno("link", to, EIO);
  }
  return base_->LinkFile(from, to);
}

}  // namespace trainscope
