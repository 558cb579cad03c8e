// libFuzzer target: a worker's incomplete marker, <trial>/incomplete_<worker>.json (trial.md,
// "Incomplete marker"), over arbitrary bytes, read from a real folder as the readers read it
// (ReadIncompleteMarkers opens files itself, bounded, regular files only). Never crashes; the
// marker is always reported (a marker means the worker lost steps, readable or not), and an
// unreadable one says why.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"

using trainscope::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/ts_marker_fuzz_XXXXXX";
    const char* made = mkdtemp(tmpl);
    Require(made != nullptr, "mkdtemp");
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);  // the scratch folder goes with the process
    });
    return std::string(made);
  }();
  const std::string path = dir + "/" + trainscope::trial_format::IncompleteMarkerPath("worker_0");
  FILE* f = fopen(path.c_str(), "wb");
  Require(f != nullptr, "writing the marker");
  Require(fwrite(data, 1, size, f) == size, "writing the marker");
  fclose(f);
  auto markers = trainscope::ReadIncompleteMarkers(dir);
  Require(markers.ok(), "listing the folder");
  Require(markers->size() == 1, "the marker is not reported");
  const auto& m = (*markers)[0];
  Require(m.worker == "worker_0", "the marker's worker");
  Require(m.readable || !m.problem.empty(), "an unreadable marker says nothing");
  return 0;
}
