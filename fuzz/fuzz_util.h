// Helpers shared by the libFuzzer drivers in fuzz/ (not a library: each driver includes it).
//
// Multi-file inputs: a driver that reads several files (a trial, a profiler folder) takes one
// input and cuts it into parts at kPartSeparator; make_corpus writes its seeds that way, from the
// real files of a trial, so the mutations start from real content in every part.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env.h"

namespace trainscope::fuzz {

inline constexpr std::string_view kPartSeparator = "\n--8<--\n";

// The input cut at kPartSeparator into exactly `n` parts (the last ones empty when the input has
// fewer separators; the rest of the input, separators included, in the last part).
inline std::vector<std::string_view> SplitParts(std::string_view input, size_t n) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < n) {
    const size_t p = input.find(kPartSeparator);
    if (p == std::string_view::npos) break;
    parts.push_back(input.substr(0, p));
    input.remove_prefix(p + kPartSeparator.size());
  }
  parts.push_back(input);
  while (parts.size() < n) parts.push_back({});
  return parts;
}

// A broken invariant: abort, so libFuzzer keeps the input as a crash.
[[noreturn]] inline void Violated(const char* what) {
  fprintf(stderr, "fuzz invariant violated: %s\n", what);
  abort();
}
inline void Require(bool ok, const char* what) {
  if (!ok) Violated(what);
}

// Writes `text` to `path` in `env` (an in-memory Env), creating its folders.
inline void PutFile(Env* env, const std::string& path, std::string_view text) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    Require(env->CreateDirs(path.substr(0, slash)).ok(), "creating a folder in memory");
  }
  Require(env->WriteFileAtomic(path, text, false).ok(), "writing a file in memory");
}

}  // namespace trainscope::fuzz
