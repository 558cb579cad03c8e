#include "trainscope/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "actions/finding_json.h"
#include "trainscope/actions_format.h"

namespace trainscope {
namespace {

using nlohmann::json;
namespace fmt = actions_format;

std::string SmdebugPath(const std::string& trial_dir) {
  const char* name = std::getenv(fmt::kSmdebugStopSignalEnv);
  if (name == nullptr || name[0] == '\0') return "";
  // smdebug joins with os.path.join: an absolute name stands on its own.
  if (name[0] == '/') return name;
  return JoinPath(trial_dir, name);
}

std::string Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

StopRequest StopRequest::FromFinding(const Finding& f) {
  StopRequest r;
  r.source = "rule";
  r.rule = f.rule;
  r.step = f.step;
  r.mode = f.mode;
  r.explanation = f.explanation.empty() ? FindingSummary(f) : f.explanation;
  r.recommendation = f.recommendation;
  r.time_micros = f.time_micros;
  return r;
}

std::string StopRequestToJson(const StopRequest& r) {
  json j = json::object();
  j["version"] = fmt::kStopSignalVersion;
  j["source"] = r.source;
  if (!r.rule.empty()) j["rule"] = r.rule;
  if (r.step >= 0) j["step"] = r.step;
  if (r.mode) j["mode"] = std::string(ModeName(*r.mode));
  j["explanation"] = r.explanation;
  if (!r.recommendation.empty()) j["recommendation"] = r.recommendation;
  j["time_us"] = r.time_micros;
  j["time"] = FormatTimeUtc(r.time_micros);
  j["host"] = actions_internal::HostName();
  j["pid"] = static_cast<int64_t>(::getpid());
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
  return r;
}

StopSignal::StopSignal(std::string trial_dir, Env* env)
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
    Result<StopRequest> r = StopRequestFromJson((*region)->view());
    if (r.ok()) return r;
    StopRequest unknown;
    unknown.source = "unknown";
    unknown.explanation = "stop file " + path_ + " is present but unreadable (" +
                          r.status().message() + "); stopping anyway";
    return unknown;
  }
  if (!smdebug_path_.empty()) {
    Result<std::shared_ptr<const FileRegion>> smd = env_->MapFile(smdebug_path_);
    if (smd.ok()) {
      StopRequest r;
      r.source = "smdebug";
      std::string body = Trim((*smd)->view());
      char* end = nullptr;
      long long secs = std::strtoll(body.c_str(), &end, 10);
      if (!body.empty() && end != nullptr && *end == '\0') {
        r.time_micros = static_cast<int64_t>(secs) * 1000000;
      }
      r.explanation = "smdebug rule stop signal " + smdebug_path_ + " (from " +
                      fmt::kSmdebugStopSignalEnv + ")";
      return r;
    }
  }
  return Status::NotFound("no stop signal at " + path_ +
                          (smdebug_path_.empty() ? std::string() : " nor " + smdebug_path_));
}

std::string StopSignal::PathFor(const std::string& trial_dir) {
  return JoinPath(JoinPath(trial_dir, fmt::kRuleOutputDir), fmt::kStopSignalFileName);
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
  std::string data = StopRequestToJson(request);
  data.push_back('\n');
  {
    TS_ASSIGN_OR_RETURN(auto file, env->NewWritableFile(tmp));
    Status s = file->Append(data);
    Status c = file->Close();
    if (s.ok()) s = c;
    if (!s.ok()) {
      env->RemoveFile(tmp);
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

namespace {

class StopTrainingAction final : public Action {
 public:
  StopTrainingAction(Env* env, std::string trial_dir, OutcomeCallback on_outcome)
      : env_(env != nullptr ? env : Env::Default()),
        trial_dir_(std::move(trial_dir)),
        on_outcome_(std::move(on_outcome)) {}

  std::string_view kind() const override { return "stop"; }
  std::string target() const override { return StopSignal::PathFor(trial_dir_); }

  Status Notify(const Finding& finding) override {
    if (finding.kind != FindingKind::kFinding) return Status::OK();
    StopRequest request = StopRequest::FromFinding(finding);
    if (request.time_micros == 0) request.time_micros = static_cast<int64_t>(env_->NowMicros());
    const bool already = env_->FileExists(target());
    Status s = StopSignal::Raise(env_, trial_dir_, request);
    if (on_outcome_) {
      ActionOutcome o;
      o.action = "stop";
      o.target = target();
      o.rule = finding.rule;
      o.step = finding.step;
      o.attempts = 1;
      o.result = s.ok() ? ActionResult::kDone : ActionResult::kFailed;
      o.detail = !s.ok()   ? s.ToString()
                 : already ? "stop already requested; first reason kept"
                           : "stop requested";
      o.time_micros = static_cast<int64_t>(env_->NowMicros());
      on_outcome_(o);
    }
    return s;
  }

 private:
  Env* env_;
  std::string trial_dir_;
  OutcomeCallback on_outcome_;
};

}  // namespace

std::unique_ptr<Action> NewStopTrainingAction(Env* env, std::string trial_dir,
                                              OutcomeCallback on_outcome) {
  return std::make_unique<StopTrainingAction>(env, std::move(trial_dir), std::move(on_outcome));
}

}  // namespace trainscope
