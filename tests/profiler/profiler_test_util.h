// Helpers for the profiler tests: temporary folders, fixture copies, reading files back.
#pragma once

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace trainscope::test_util {

// tests/profiler/data (next to this file).
inline std::string ProfilerDataDir() {
  return std::string(TRAINSCOPE_SOURCE_DIR) + "/tests/profiler/data";
}

// A fresh folder under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ts_profiler_XXXXXX";
    path_ = mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteAll(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);  // same inode when it exists
  out << data;
}

// Makes `dst` hold the files of `src`, the way /proc changes: existing files are rewritten in
// place (a kept-open descriptor sees the new content) and files missing from `src` are emptied
// (as a vanished process's stat reads nothing).
inline void MirrorTreeInPlace(const std::string& src, const std::string& dst) {
  namespace fs = std::filesystem;
  std::vector<std::string> seen;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), src).string();
    WriteAll(dst + "/" + rel, ReadAll(e.path().string()));
    seen.push_back(rel);
  }
  if (!fs::exists(dst)) return;
  for (const auto& e : fs::recursive_directory_iterator(dst)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), dst).string();
    if (std::find(seen.begin(), seen.end(), rel) == seen.end()) WriteAll(e.path().string(), "");
  }
}

// Paths of every regular file under dir, relative to it, sorted.
inline std::vector<std::string> ListTree(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(std::filesystem::relative(e.path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace trainscope::test_util
