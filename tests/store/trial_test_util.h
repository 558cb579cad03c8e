// Helpers for the trial reader tests: temporary folders and small files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "trainscope/env.h"

namespace trainscope::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it at destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ts_trial_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `data` to `path` (creating its folder) through a .tmp file and a rename, as writers do.
inline void PutFile(Env* env, const std::string& path, std::string_view data) {
  ASSERT_TRUE(env->CreateDirs(std::string(Dirname(path))).ok());
  Status s = env->WriteFileAtomic(path, data, false);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

}  // namespace trainscope::testing
