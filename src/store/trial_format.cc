#include "trainscope/trial_format.h"

#include <charconv>
#include <cstdio>

namespace trainscope::trial_format {

namespace {

// Python's format(n, "0<width>d"): zero padded, the sign counting toward the width.
std::string Padded(int64_t n, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*lld", width, static_cast<long long>(n));
  return buf;
}

// Python's floor division, so negative steps land where smdebug would put them.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::string StepFileStem(int64_t step, std::string_view worker) {
  std::string s = Padded(step, 12);
  s += '_';
  s += worker;
  return s;
}

}  // namespace

std::string EventFilePath(int64_t global_step, std::string_view worker) {
  std::string p(kEventsDir);
  p += '/';
  p += Padded(global_step, 12);
  p += '/';
  p += StepFileStem(global_step, worker);
  p += kEventSuffix;
  return p;
}

std::string IndexFolder(int64_t global_step) {
  std::string p(kIndexDir);
  p += '/';
  p += Padded(FloorDiv(global_step, kIndexFilesPerFolder), 9);
  return p;
}

std::string IndexFilePath(int64_t global_step, std::string_view worker) {
  std::string p = IndexFolder(global_step);
  p += '/';
  p += StepFileStem(global_step, worker);
  p += ".json";
  return p;
}

std::string IncompleteMarkerPath(std::string_view worker) {
  std::string p(kIncompletePrefix);
  p += worker;
  p += kIncompleteSuffix;
  return p;
}

std::string CollectionsFilePath(std::string_view worker) {
  std::string p(kCollectionsDir);
  p += '/';
  p += kCollectionsSubdir;
  p += '/';
  p += worker;
  p += "_collections.json";
  return p;
}

std::optional<StepFileName> ParseStepFileName(std::string_view basename) {
  std::string_view stem;
  for (std::string_view ext : {std::string_view(".json"), kEventSuffix, std::string_view(".csv")}) {
    if (basename.size() > ext.size() && basename.substr(basename.size() - ext.size()) == ext) {
      stem = basename.substr(0, basename.size() - ext.size());
      break;
    }
  }
  if (stem.empty()) return std::nullopt;
  size_t digits_begin = (stem[0] == '-') ? 1 : 0;
  size_t us = stem.find('_', digits_begin);
  if (us == std::string_view::npos || us == digits_begin || us + 1 >= stem.size()) {
    return std::nullopt;
  }
  for (size_t i = digits_begin; i < us; ++i) {
    if (stem[i] < '0' || stem[i] > '9') return std::nullopt;
  }
  int64_t step = 0;
  auto [ptr, ec] = std::from_chars(stem.data(), stem.data() + us, step);
  if (ec != std::errc() || ptr != stem.data() + us) return std::nullopt;
  return StepFileName{step, std::string(stem.substr(us + 1))};
}

}  // namespace trainscope::trial_format
