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

#include <memory>
#include <vector>

#include "trainscope/trial.h"
#include "trainscope/writer.h"

namespace trainscope::testing {

// A collections file: "weights" (include_regex "weight"), "losses" (tensor_names ["loss"]).
inline std::string CollectionsJson(int num_workers) {
  return R"({"collections": {
    "weights": {"name": "weights", "include_regex": ["weight"], "tensor_names": [],
                "reduction_config": null, "save_config": null, "save_histogram": true},
    "losses": {"name": "losses", "include_regex": [], "tensor_names": ["loss"],
               "reduction_config": {"save_raw_tensor": true, "reductions": "mean"},
               "save_config": null, "save_histogram": false}},
    "_meta": {"num_workers": )" +
         std::to_string(num_workers) + "}}";
}

inline std::unique_ptr<TrialWriter> OpenWriter(Env* env, const std::string& dir,
                                               const std::string& worker = "worker_0",
                                               bool end_marker = true) {
  WriterOptions o;
  o.env = env;
  o.worker = worker;
  o.write_end_marker = end_marker;
  o.quiet = true;
  auto w = TrialWriter::Open(dir, o);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? std::move(w).value() : nullptr;
}

// `n` floats that depend on the step and a salt, so each value read back is checkable.
// n pseudo-random bytes, the same for the same seed (journal and writer tests).
inline std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

inline std::vector<float> Pattern(int64_t step, int64_t n, float salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = salt + static_cast<float>(step) * 1000.0f + i * 0.5f;
  return v;
}

inline TensorView FloatView(const std::vector<float>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return TensorView{DType::kF32, v.data(), std::move(shape), {}, {}};
}

// The floats of a tensor read back (REQUIRES: kF32).
inline std::vector<float> Floats(const Tensor& t) {
  const float* p = static_cast<const float*>(t.data);
  return std::vector<float>(p, p + t.num_elements());
}

inline TrialOptions FastOptions(Env* env, bool inotify = true) {
  TrialOptions o;
  o.env = env;
  o.use_inotify = inotify;
  o.end_delay = std::chrono::milliseconds(0);
  return o;
}

}  // namespace trainscope::testing
