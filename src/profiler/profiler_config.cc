#include "trainscope/profiler_config.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "trainscope/profiler_format.h"

namespace trainscope {
namespace pf = profiler_format;
using nlohmann::json;

namespace {

// JSON text of v; never throws (invalid UTF-8 is replaced).
std::string Dump(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// "Rotate_Max_FileSize" -> "rotatemaxfilesize".
std::string NormKey(std::string_view k) {
  std::string out;
  out.reserve(k.size());
  for (char c : k) {
    if (c == '_') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// Finds a key of `obj` case-insensitively (ignoring '_').
const json* Find(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const std::string want = NormKey(key);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (NormKey(it.key()) == want) return &*it;
  }
  return nullptr;
}

// A number, or a string holding one (smdebug converts with int()/float()).
std::optional<double> AsNumber(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d)) return d;
  }
  return std::nullopt;
}

bool AsBool(const json& v, bool fallback) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) {
    std::string s = NormKey(v.get<std::string>());
    if (s == "true" || s == "1" || s == "yes") return true;
    if (s == "false" || s == "0" || s == "no") return false;
  }
  return fallback;
}

// A sub-config: a JSON string holding an object (smdebug eval()s it, so Python's single quotes
// are accepted too), or an object.
std::optional<json> SubConfig(const json& v, std::string* error) {
  if (v.is_object()) return v;
  if (!v.is_string()) {
    *error = "must be a JSON object in a string";
    return std::nullopt;
  }
  std::string text = v.get<std::string>();
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    for (char& c : text) {
      if (c == '\'') c = '"';
    }
    j = json::parse(text, nullptr, false);
  }
  if (j.is_discarded() || !j.is_object()) {
    *error = "is not a JSON object: " + v.get<std::string>();
    return std::nullopt;
  }
  return j;
}

void ParseRange(const json& params, std::string_view key, std::string_view label, ProfileRange* r,
                std::vector<std::string>* warnings) {
  const json* v = Find(params, key);
  if (v == nullptr) return;
  std::string error;
  std::optional<json> sub = SubConfig(*v, &error);
  auto disable = [&](const std::string& why) {
    r->error = why;
    r->start_step.reset();
    r->num_steps.reset();
    r->start_time_s.reset();
    r->duration_s.reset();
    warnings->push_back(std::string(key) + " " + why + "; " + std::string(label) + " is disabled");
  };
  if (!sub) {
    r->specified = true;
    disable(error);
    return;
  }
  if (sub->empty()) return;  // "{}": not specified
  r->specified = true;
  auto number = [&](std::string_view k, bool integer, auto* out) -> bool {
    const json* f = Find(*sub, k);
    if (f == nullptr || f->is_null()) return true;
    auto n = AsNumber(*f);
    if (!n || (integer && *n != std::floor(*n))) {
      disable(std::string(k) + "=" + Dump(*f) + " is not " + (integer ? "an integer" : "a number"));
      return false;
    }
    *out = static_cast<std::remove_reference_t<decltype(**out)>>(*n);
    return true;
  };
  if (!number("StartStep", true, &r->start_step) || !number("NumSteps", true, &r->num_steps) ||
      !number("StartTimeInSecSinceEpoch", false, &r->start_time_s) ||
      !number("DurationInSeconds", false, &r->duration_s)) {
    return;
  }
  if (r->has_step_range() && r->has_time_range()) {
    disable(
        "has both step fields (StartStep/NumSteps) and time fields "
        "(StartTimeInSecSinceEpoch/DurationInSeconds)");
    return;
  }
  if (const json* f = Find(*sub, "MetricsRegex"); f && f->is_string()) {
    r->metrics_regex = f->get<std::string>();
  }
  if (const json* f = Find(*sub, "ProfilerName"); f && f->is_string()) {
    r->profiler_name = f->get<std::string>();
  }
  if (const json* f = Find(*sub, "cProfileTimer"); f && f->is_string()) {
    r->cprofile_timer = f->get<std::string>();
  }
}

}  // namespace

bool ProfileRange::ShouldProfile(int64_t step, double now_s) {
  if (!enabled()) return false;
  if (has_step_range()) {
    if (!start_step) start_step = step;
    if (!num_steps) num_steps = 1;
    if (!end_step_) end_step_ = *start_step + *num_steps;
    return *start_step <= step && step < *end_step_;
  }
  if (has_time_range()) {
    if (!start_time_s) start_time_s = now_s;
    if (duration_s) {
      if (!end_time_s_) end_time_s_ = *start_time_s + *duration_s;
      return *start_time_s <= now_s && now_s < *end_time_s_;
    }
    if (*start_time_s <= now_s) {
      if (!end_step_) end_step_ = step + 1;
      return step < *end_step_;
    }
  }
  return false;
}

Result<ProfilerConfig> ParseProfilerConfig(std::string_view text, std::string_view source) {
  json root = json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return Status::InvalidArgument(
        std::string(source) + ": not a JSON object; fix the file or unset " +
        std::string(pf::kProfilerConfigEnv) + "/" + std::string(pf::kSmProfilerConfigEnv));
  }
  ProfilerConfig c;
  if (const json* d = Find(root, "DisableProfiler"); d && AsBool(*d, false)) {
    c.warnings.push_back(std::string(source) + ": DisableProfiler is true; profiler off");
    return c;
  }
  const json* params = Find(root, "ProfilingParameters");
  if (params == nullptr || !params->is_object() || params->empty()) {
    c.warnings.push_back(std::string(source) + ": no ProfilingParameters; profiler off");
    return c;
  }
  if (const json* e = Find(*params, "ProfilerEnabled"); e && !AsBool(*e, true)) {
    c.warnings.push_back(std::string(source) + ": ProfilerEnabled is false; profiler off");
    return c;
  }
  c.enabled = true;
  if (const json* v = Find(*params, "LocalPath"); v && v->is_string()) {
    c.local_path = v->get<std::string>();
  }
  auto number = [&](std::string_view key, double min, auto* out) {
    const json* v = Find(*params, key);
    if (v == nullptr) return;
    auto n = AsNumber(*v);
    if (!n || *n < min) {
      c.warnings.push_back(std::string(source) + ": " + std::string(key) + "=" + Dump(*v) +
                           " is not a number >= " + std::to_string(static_cast<int64_t>(min)) +
                           "; using the default " + std::to_string(*out));
      return;
    }
    *out = static_cast<std::remove_reference_t<decltype(*out)>>(*n);
  };
  number("RotateMaxFileSizeInBytes", 1, &c.rotate_max_file_size_bytes);
  number("RotateFileCloseIntervalInSeconds", 0.001, &c.rotate_file_close_interval_seconds);
  number("FileOpenFailThreshold", 1, &c.file_open_fail_threshold);
  number("PhaseMinIntervalInMilliseconds", 0, &c.phase_min_interval_millis);

  for (const json* obj : {static_cast<const json*>(&root), params}) {
    for (std::string_view key :
         {"SystemMonitorIntervalMillis", "ProfilingIntervalInMilliseconds"}) {
      const json* v = Find(*obj, key);
      if (v == nullptr) continue;
      auto n = AsNumber(*v);
      if (!n || *n != std::floor(*n) || *n < pf::kMinSystemIntervalMillis ||
          *n > pf::kMaxSystemIntervalMillis) {
        return Status::InvalidArgument(std::string(source) + ": " + std::string(key) + "=" +
                                       Dump(*v) +
                                       " is out of range: system_monitor_interval_millis allowed " +
                                       std::to_string(pf::kMinSystemIntervalMillis) + " to " +
                                       std::to_string(pf::kMaxSystemIntervalMillis) + " ms");
      }
      c.system_monitor_interval_millis = static_cast<int64_t>(*n);
    }
  }
  ParseRange(*params, "DetailedProfilingConfig", "detailed profiling", &c.detailed_profiling,
             &c.warnings);
  ParseRange(*params, "DataloaderProfilingConfig", "dataloader profiling", &c.dataloader_profiling,
             &c.warnings);
  ParseRange(*params, "PythonProfilingConfig", "python profiling", &c.python_profiling,
             &c.warnings);
  ParseRange(*params, "SMDataParallelProfilingConfig", "smdataparallel profiling",
             &c.smdataparallel_profiling, &c.warnings);
  if (c.dataloader_profiling.enabled() && c.dataloader_profiling.metrics_regex.empty()) {
    c.dataloader_profiling.metrics_regex = ".*";
  }
  ProfileRange& py = c.python_profiling;
  if (py.enabled()) {
    if (py.profiler_name.empty()) py.profiler_name = "cprofile";
    if (py.profiler_name != "cprofile" && py.profiler_name != "pyinstrument") {
      py.error = "ProfilerName must be cprofile or pyinstrument, got " + py.profiler_name;
      c.warnings.push_back("PythonProfilingConfig " + py.error + "; python profiling is disabled");
    } else if (py.profiler_name == "cprofile" && py.cprofile_timer.empty()) {
      py.cprofile_timer = "total_time";
    }
  }
  return c;
}

Result<ProfilerConfig> LoadProfilerConfig(Env* env) {
  if (env == nullptr) env = Env::Default();
  std::string path;
  std::string var;
  for (std::string_view name : {pf::kProfilerConfigEnv, pf::kSmProfilerConfigEnv}) {
    const char* v = std::getenv(std::string(name).c_str());
    if (v != nullptr && *v != '\0') {
      path = v;
      var = name;
      break;
    }
  }
  ProfilerConfig off;
  if (path.empty()) {
    off.warnings.push_back("neither " + std::string(pf::kProfilerConfigEnv) + " nor " +
                           std::string(pf::kSmProfilerConfigEnv) + " is set; profiler off");
    return off;
  }
  if (!env->FileExists(path)) {
    off.source_path = path;
    off.warnings.push_back(var + "=" + path + " does not exist; profiler off");
    return off;
  }
  auto text = env->ReadFile(path);
  if (!text.ok()) return text.status().WithContext("reading profiler config " + var + "=" + path);
  TS_ASSIGN_OR_RETURN(ProfilerConfig c, ParseProfilerConfig(*text, path));
  c.source_path = path;
  return c;
}

}  // namespace trainscope
