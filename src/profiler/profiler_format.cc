#include "trainscope/profiler_format.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <ctime>

namespace trainscope::profiler_format {
namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

std::string HourFolderName(int64_t epoch_seconds) {
  time_t t = static_cast<time_t>(epoch_seconds);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04d%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour);
  return buf;
}

std::string NodeIdForIndex(int node_index) {
  return std::string(kNodePrefix) + std::to_string(node_index);
}

std::string SystemMetricsFilePath(int64_t epoch_seconds, int node_index) {
  int64_t minute = FloorDiv(epoch_seconds, kSystemFileSeconds) * kSystemFileSeconds;
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010lld", static_cast<long long>(minute));
  std::string out(kSystemIncrementalDir);
  out.append("/").append(HourFolderName(minute)).append("/").append(stamp);
  out.append(".").append(NodeIdForIndex(node_index)).append(".json");
  return out;
}

std::string TimelineFilePath(int64_t end_us, std::string_view node_id, std::string_view suffix) {
  std::string out(kFrameworkEventsDir);
  out.append("/").append(HourFolderName(FloorDiv(end_us, 1000000))).append("/");
  out.append(std::to_string(end_us)).append("_").append(node_id).append("_").append(suffix);
  return out;
}

std::string DefaultTimelineNodeId() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  std::string id = std::to_string(::getpid()) + "-" + host;
  for (char& c : id) {
    if (c == '_') c = '-';
  }
  return id;
}

std::optional<SystemFileName> ParseSystemFileName(std::string_view basename) {
  // <10 digits>.algo-<digits>.json
  if (basename.size() < 10 || !AllDigits(basename.substr(0, 10))) return std::nullopt;
  std::string_view rest = basename.substr(10);
  constexpr std::string_view kPrefix = ".algo-";
  constexpr std::string_view kExt = ".json";
  static_assert(kPrefix.substr(1) == kNodePrefix);
  if (rest.size() <= kPrefix.size() + kExt.size()) return std::nullopt;
  if (rest.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  if (rest.substr(rest.size() - kExt.size()) != kExt) return std::nullopt;
  std::string_view node_num =
      rest.substr(kPrefix.size(), rest.size() - kPrefix.size() - kExt.size());
  if (!AllDigits(node_num)) return std::nullopt;
  SystemFileName out;
  std::from_chars(basename.data(), basename.data() + 10, out.minute_epoch_seconds);
  out.node_id.assign(kNodePrefix).append(node_num);
  return out;
}

std::optional<TimelineFileName> ParseTimelineFileName(std::string_view basename) {
  if (basename.size() < 5 || basename.substr(basename.size() - 5) != ".json") return std::nullopt;
  size_t u1 = basename.find('_');
  if (u1 == std::string_view::npos) return std::nullopt;
  size_t u2 = basename.find('_', u1 + 1);
  if (u2 == std::string_view::npos || u2 == u1 + 1) return std::nullopt;
  std::string_view ts = basename.substr(0, u1);
  if (!AllDigits(ts) || ts.size() > 18) return std::nullopt;
  TimelineFileName out;
  std::from_chars(ts.data(), ts.data() + ts.size(), out.end_us);
  out.node_id = std::string(basename.substr(u1 + 1, u2 - u1 - 1));
  out.suffix = std::string(basename.substr(u2 + 1));
  if (out.suffix.size() <= 5) return std::nullopt;
  return out;
}

}  // namespace trainscope::profiler_format
