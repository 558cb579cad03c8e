#include "trainscope/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "trainscope/time_format.h"
#include "trainscope/trial_format.h"

namespace trainscope {
namespace {

using nlohmann::json;
namespace fmt = stop_signal_format;

std::string SmdebugPath(const std::string& trial_dir) {
  const char* name = std::getenv(fmt::kSmdebugEnv);
  if (name == nullptr || name[0] == '\0') return "";
  // smdebug joins with os.path.join: an absolute name stands on its own.
  if (name[0] == '/') return name;
  return JoinPath(trial_dir, name);
}

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \n\t\r";
  while (!s.empty() && kSpace.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  while (!s.empty() && kSpace.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return s;
}

// The reason of a file that is present but gives none.
StopRequest Unknown(std::string explanation) {
  StopRequest r;
  r.source = "unknown";
  r.explanation = std::move(explanation);
  return r;
}

}  // namespace

std::string StopRequest::ToString() const {
  const std::string who = !rule.empty()         ? rule
                          : source == "smdebug" ? std::string("an smdebug rule")
                                                : std::string("a person");
  return who + " at step " + (step >= 0 ? std::to_string(step) : std::string("?")) + ": " +
         explanation;
}

std::string StopRequestToJson(const StopRequest& r) {
  json j = json::object();
  j["version"] = fmt::kVersion;
  j["source"] = r.source;
  if (!r.rule.empty()) j["rule"] = r.rule;
  if (r.step >= 0) j["step"] = r.step;
  if (r.mode) j["mode"] = std::string(ModeName(*r.mode));
  j["explanation"] = r.explanation;
  if (!r.recommendation.empty()) j["recommendation"] = r.recommendation;
  j["time_us"] = r.time_micros;
  j["time"] = FormatTimeUtc(r.time_micros);
  if (!r.host.empty()) j["host"] = r.host;
  if (r.pid > 0) j["pid"] = r.pid;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<StopRequest> StopRequestFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("stop signal: not a JSON object: " +
                                   std::string(text.substr(0, 200)));
  }
  StopRequest r;
  auto str = [&](const char* key, std::string* out) -> Status {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return Status::OK();
    if (!it->is_string()) {
      return Status::InvalidArgument(std::string("stop signal: key \"") + key +
                                     "\" must be a string");
    }
    *out = it->get<std::string>();
    return Status::OK();
  };
  auto integer = [&](const char* key, int64_t* out) -> Status {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return Status::OK();
    if (!it->is_number_integer()) {
      return Status::InvalidArgument(std::string("stop signal: key \"") + key +
                                     "\" must be an integer");
    }
    *out = it->get<int64_t>();
    return Status::OK();
  };
  TS_RETURN_IF_ERROR(str("source", &r.source));
  TS_RETURN_IF_ERROR(str("rule", &r.rule));
  TS_RETURN_IF_ERROR(integer("step", &r.step));
  std::string mode;
  TS_RETURN_IF_ERROR(str("mode", &mode));
  if (!mode.empty()) {
    r.mode = ModeFromName(mode);
    if (!r.mode) return Status::InvalidArgument("stop signal: unknown mode \"" + mode + "\"");
  }
  TS_RETURN_IF_ERROR(str("explanation", &r.explanation));
  TS_RETURN_IF_ERROR(str("recommendation", &r.recommendation));
  TS_RETURN_IF_ERROR(integer("time_us", &r.time_micros));
  TS_RETURN_IF_ERROR(str("host", &r.host));
  TS_RETURN_IF_ERROR(integer("pid", &r.pid));
  return r;
}

StopSignal::StopSignal(const std::string& trial_dir, Env* env)
    : env_(env != nullptr ? env : Env::Default()),
      path_(PathFor(trial_dir)),
      smdebug_path_(SmdebugPath(trial_dir)) {}

bool StopSignal::Check() const {
  if (env_->FileExists(path_)) return true;
  return !smdebug_path_.empty() && env_->FileExists(smdebug_path_);
}

bool StopSignal::Check(const std::string& trial_dir) { return StopSignal(trial_dir).Check(); }

Result<StopRequest> StopSignal::Read() const {
  // MapFile opens the file once and sizes it from that descriptor, so a stop file replaced by a
  // rename meanwhile is read whole, old or new (Env::ReadFile may size one file and read another).
  Result<std::shared_ptr<const FileRegion>> region = env_->MapFile(path_);
  if (region.ok()) {
    if (Trim((*region)->view()).empty()) return Unknown("stop file present (no reason given)");
    Result<StopRequest> r = StopRequestFromJson((*region)->view());
    if (r.ok()) return r;
    return Unknown("stop file " + path_ + " is present but unreadable (" + r.status().message() +
                   "); stopping anyway");
  }
  // Present but refused (e.g. a FIFO, which MapFile will not open): a stop all the same. Not
  // found is no stop: a file that appears after MapFile looked is seen at the next Check.
  if (region.status().code() != StatusCode::kNotFound && env_->FileExists(path_)) {
    return Unknown("stop file " + path_ + " is present but unreadable (" +
                   region.status().message() + "); stopping anyway");
  }
  if (!smdebug_path_.empty()) {
    Result<std::shared_ptr<const FileRegion>> smd = env_->MapFile(smdebug_path_);
    if (smd.ok() ||
        (smd.status().code() != StatusCode::kNotFound && env_->FileExists(smdebug_path_))) {
      StopRequest r;
      r.source = "smdebug";
      const std::string body(smd.ok() ? Trim((*smd)->view()) : std::string_view());
      char* end = nullptr;
      const long long secs = std::strtoll(body.c_str(), &end, 10);
      if (!body.empty() && end != nullptr && *end == '\0') {
        r.time_micros = static_cast<int64_t>(secs) * 1000000;
      }
      r.explanation =
          "smdebug's rule stop file " + smdebug_path_ + " (named by " + fmt::kSmdebugEnv + ")";
      return r;
    }
  }
  return Status::NotFound("no stop signal at " + path_ +
                          (smdebug_path_.empty() ? std::string() : " nor " + smdebug_path_));
}

std::string StopSignal::PathFor(const std::string& trial_dir) {
  return JoinPath(JoinPath(trial_dir, trial_format::kRuleOutputDir), fmt::kFileName);
}

Status StopSignal::Raise(Env* env, const std::string& trial_dir, const StopRequest& request) {
  if (env == nullptr) env = Env::Default();
  const std::string path = PathFor(trial_dir);
  if (env->FileExists(path)) return Status::OK();  // the first reason wins
  TS_RETURN_IF_ERROR(env->CreateDirs(std::string(Dirname(path)))
                         .WithContext("stop signal: cannot create the rule-output folder"));
  // A temporary name unique to this process and call, so concurrent raisers never share one.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  StopRequest stamped = request;
  stamped.host = HostName();
  stamped.pid = static_cast<int64_t>(::getpid());
  std::string data = StopRequestToJson(stamped);
  data.push_back('\n');
  {
    TS_ASSIGN_OR_RETURN(auto file, env->NewWritableFile(tmp));
    Status s = file->Append(data);
    Status c = file->Close();
    if (s.ok()) s = c;
    if (!s.ok()) {
      (void)env->RemoveFile(tmp);  // cleanup; the caller gets `s`
      return s.WithContext("stop signal: writing " + tmp);
    }
  }
  // Published with a hard link, which fails if the file exists: of raisers racing (one rule
  // worker per rule), exactly one reason lands, and a training that read it never sees it change.
  // Without hard links, a rename (a raiser that passed the check above at the same moment as
  // another may then replace its reason).
  Status s = env->LinkFile(tmp, path);
  if (s.code() == StatusCode::kNotSupported) s = env->RenameFile(tmp, path);
  (void)env->RemoveFile(tmp);  // the temporary name (gone already after a rename)
  if (s.code() == StatusCode::kAborted) return Status::OK();  // another reason won the race
  return s.WithContext("stop signal: publishing " + path);
}

Status StopSignal::Clear(Env* env, const std::string& trial_dir) {
  if (env == nullptr) env = Env::Default();
  const std::string path = PathFor(trial_dir);
  if (!env->FileExists(path)) return Status::OK();
  return env->RemoveFile(path).WithContext("stop signal: clearing");
}

}  // namespace trainscope
