#include "trainscope/env.h"

#include <chrono>
#include <cstring>

namespace trainscope {

Result<std::string> Env::ReadRange(const std::string& path, uint64_t offset, size_t n) {
  TS_ASSIGN_OR_RETURN(auto region, MapFile(path));
  if (offset >= region->size()) return std::string();
  size_t len = std::min<uint64_t>(n, region->size() - offset);
  return std::string(region->data() + offset, len);
}

Status FileTooLarge(const std::string& path, uint64_t size, uint64_t max_bytes) {
  return Status::OutOfRange(path + " is " + std::to_string(size) + " bytes, more than the " +
                            std::to_string(max_bytes) + " it may be: not read");
}

Result<std::string> Env::ReadFile(const std::string& path, uint64_t max_bytes) {
  TS_ASSIGN_OR_RETURN(auto region, MapFile(path));
  if (region->size() > max_bytes) return FileTooLarge(path, region->size(), max_bytes);
  return std::string(region->view());
}

Status Env::WriteFileAtomic(const std::string& path, std::string_view data, bool sync) {
  const std::string tmp = path + ".tmp";
  {
    TS_ASSIGN_OR_RETURN(auto file, NewWritableFile(tmp));
    Status s = file->Append(data);
    if (s.ok() && sync) s = file->Sync();
    Status c = file->Close();
    if (s.ok()) s = c;
    if (!s.ok()) {
      (void)RemoveFile(tmp);  // cleanup; the caller gets `s`
      return s;
    }
  }
  Status s = RenameFile(tmp, path);
  if (!s.ok()) {
    (void)RemoveFile(tmp);  // cleanup, as above
    return s;
  }
  if (sync) return SyncDir(std::string(Dirname(path)));
  return Status::OK();
}

uint64_t Env::NowMicros() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  if (out.back() != '/') out.push_back('/');
  if (b.front() == '/') b.remove_prefix(1);
  out.append(b);
  return out;
}

std::string_view Dirname(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto pos = path.rfind('/');
  if (pos == std::string_view::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string_view Basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto pos = path.rfind('/');
  return pos == std::string_view::npos ? path : path.substr(pos + 1);
}

}  // namespace trainscope
