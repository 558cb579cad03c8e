#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "profiler/reader_util.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/profiler_format.h"

namespace trainscope {
namespace pf = profiler_format;
using nlohmann::json;

namespace {

constexpr int64_t kMinuteUs = pf::kSystemFileSeconds * 1000000;

const std::string* StringField(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

bool NumberField(const json& obj, const char* key, double* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return std::isfinite(*out);
}

}  // namespace

SystemMetricsReader::SystemMetricsReader(Env* env, std::string trial_dir)
    : env_(env ? env : Env::Default()), trial_dir_(std::move(trial_dir)) {}

Status SystemMetricsReader::Refresh() {
  std::vector<std::string> paths;
  reader_util::ListFilesRecursive(env_, JoinPath(trial_dir_, pf::kSystemDir), 3, &paths);
  std::vector<SystemMetricsFile> files;
  for (std::string& p : paths) {
    auto parsed = pf::ParseSystemFileName(Basename(p));
    if (!parsed) continue;
    files.push_back(
        {parsed->minute_epoch_seconds * 1000000, std::move(parsed->node_id), std::move(p)});
  }
  std::sort(files.begin(), files.end(), [](const SystemMetricsFile& a, const SystemMetricsFile& b) {
    return a.minute_us != b.minute_us ? a.minute_us < b.minute_us : a.path < b.path;
  });
  files_ = std::move(files);
  listed_ = true;
  return Status::OK();
}

int64_t SystemMetricsReader::FirstTimestampMicros() const {
  return files_.empty() ? 0 : files_.front().minute_us;
}

int64_t SystemMetricsReader::LatestTimestampMicros() const {
  return files_.empty() ? 0 : files_.back().minute_us;
}

std::vector<SystemMetricEvent> SystemMetricsReader::ParseFile(std::string_view contents,
                                                              std::string_view path,
                                                              ReaderStats* stats) {
  std::vector<SystemMetricEvent> out;
  reader_util::ForEachLine(contents, [&](std::string_view line, int64_t n) {
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    const std::string *type = nullptr, *dim = nullptr, *node = nullptr, *name = nullptr;
    double value = 0, ts = 0;
    bool ok = !j.is_discarded() && j.is_object() && (type = StringField(j, "Type")) &&
              (dim = StringField(j, "Dimension")) && NumberField(j, "Value", &value) &&
              NumberField(j, "Timestamp", &ts);
    // A timestamp past about 126,000 years is no time (int64 microseconds must hold it).
    ok = ok && std::isfinite(ts) && std::fabs(ts) <= 4e12;
    if (!ok) {
      ++stats->lines_skipped;
      reader_util::AddProblem(stats, std::string(path) + " line " + std::to_string(n) +
                                         ": not a system-metrics record (skipped)");
      return;
    }
    name = StringField(j, "Name");
    node = StringField(j, "NodeId");
    SystemMetricEvent e;
    e.type = *type;
    e.name = name ? *name : std::string();
    e.dimension = *dim;
    e.value = value;
    e.node_id = node ? *node : std::string();
    e.timestamp_us = std::llround(ts * 1e6);
    out.push_back(std::move(e));
  });
  ++stats->files_parsed;
  return out;
}

Result<std::vector<SystemMetricEvent>> SystemMetricsReader::GetEvents(int64_t start_us,
                                                                      int64_t end_us,
                                                                      const SystemMetricsQuery& q) {
  if (!listed_) TS_RETURN_IF_ERROR(Refresh());
  std::vector<SystemMetricEvent> out;
  if (end_us <= start_us) return out;
  // A file holds the samples of its minute; one minute of slack either side for clock skew.
  const int64_t lo = start_us > kTimeMin + 2 * kMinuteUs ? start_us - 2 * kMinuteUs : kTimeMin;
  const int64_t hi = end_us < kTimeMax - kMinuteUs ? end_us + kMinuteUs : kTimeMax;
  for (const SystemMetricsFile& f : files_) {
    if (f.minute_us < lo || f.minute_us >= hi) continue;
    if (!q.node_id.empty() && f.node_id != q.node_id) continue;
    auto size = env_->GetFileSize(f.path);
    if (!size.ok()) {
      ++stats_.files_failed;
      reader_util::AddProblem(&stats_, size.status().ToString());
      continue;
    }
    Cached& c = cache_[f.path];
    if (c.size != *size || (c.events.empty() && *size > 0)) {
      auto contents = env_->ReadFile(f.path, profiler_format::kMaxReadFileBytes);
      if (!contents.ok()) {
        ++stats_.files_failed;
        reader_util::AddProblem(&stats_, contents.status().ToString());
        continue;
      }
      c.events = ParseFile(*contents, f.path, &stats_);
      c.size = contents->size();
    }
    for (const SystemMetricEvent& e : c.events) {
      if (e.timestamp_us < start_us || e.timestamp_us >= end_us) continue;
      if (!q.type.empty() && e.type != q.type) continue;
      if (!q.dimension.empty() && e.dimension != q.dimension) continue;
      if (!q.node_id.empty() && e.node_id != q.node_id) continue;
      out.push_back(e);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const SystemMetricEvent& a, const SystemMetricEvent& b) {
                     return a.timestamp_us < b.timestamp_us;
                   });
  return out;
}

Result<std::vector<SystemMetricEvent>> GetSystemEventsByStep(SystemMetricsReader* system,
                                                             TimelineReader* timeline,
                                                             int64_t start_step, int64_t end_step,
                                                             const SystemMetricsQuery& q) {
  TS_ASSIGN_OR_RETURN(StepTimeRange r, timeline->GetStepTimeRange(start_step, end_step));
  return system->GetEvents(r.start_us, r.end_us, q);
}

}  // namespace trainscope
