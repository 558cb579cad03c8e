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
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"

using trainscope::fuzz::Require;

namespace {

// The scratch folder and its marker: plain arrays, still valid in the atexit handler (a static
// std::string would be destroyed before it runs).
char g_dir[] = "/tmp/ts_marker_fuzz_XXXXXX";
char g_marker[sizeof(g_dir) + 64];

void RemoveScratch() {
  unlink(g_marker);
  rmdir(g_dir);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool made = [] {
    Require(mkdtemp(g_dir) != nullptr, "mkdtemp");
    const std::string marker =
        std::string(g_dir) + "/" + trainscope::trial_format::IncompleteMarkerPath("worker_0");
    Require(marker.size() < sizeof(g_marker), "marker path length");
    std::snprintf(g_marker, sizeof(g_marker), "%s", marker.c_str());
    std::atexit(RemoveScratch);  // the scratch folder goes with the process
    return true;
  }();
  (void)made;
  const std::string dir = g_dir;
  const std::string path = g_marker;
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
