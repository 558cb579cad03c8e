#include "trainscope/event_log.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "trainscope/actions_format.h"
#include "trainscope/finding.h"

namespace trainscope {
namespace {

using nlohmann::json;
namespace fmt = actions_format;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::optional<ActionResult> ActionResultFromName(const std::string& name) {
  for (ActionResult r : {ActionResult::kDone, ActionResult::kFailed, ActionResult::kDropped,
                         ActionResult::kSuppressed}) {
    if (name == ActionResultName(r)) return r;
  }
  return std::nullopt;
}

// An integer key of a line: `fallback` when absent or null; false when it holds anything but an
// integer (json::value would convert a float such as 5e76 to int64, which is undefined).
bool IntKey(const json& j, const char* key, int64_t fallback, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    *out = fallback;
    return true;
  }
  if (!it->is_number_integer()) return false;
  *out = it->get<int64_t>();
  return true;
}

}  // namespace

EventLog::EventLog(Env* env, std::string path, std::unique_ptr<WritableFile> file)
    : env_(env), path_(std::move(path)), file_(std::move(file)) {}

EventLog::~EventLog() {
  MutexLock lock(&mu_);
  if (file_) (void)file_->Close();  // each line was flushed when appended: nothing is lost
}

std::string EventLog::PathFor(const std::string& trial_dir) {
  return JoinPath(JoinPath(trial_dir, fmt::kRuleOutputDir), fmt::kEventLogFileName);
}

Result<std::unique_ptr<EventLog>> EventLog::Open(Env* env, const std::string& trial_dir) {
  return OpenFile(env, PathFor(trial_dir));
}

Result<std::unique_ptr<EventLog>> EventLog::OpenFile(Env* env, const std::string& path) {
  if (env == nullptr) env = Env::Default();
  TS_RETURN_IF_ERROR(
      env->CreateDirs(std::string(Dirname(path))).WithContext("event log: creating its folder"));
  Result<std::unique_ptr<WritableFile>> file = env->NewAppendableFile(path);
  if (!file.ok()) return file.status().WithContext("event log: opening " + path);
  return std::unique_ptr<EventLog>(new EventLog(env, path, std::move(file).value()));
}

uint64_t EventLog::lines_written() const {
  MutexLock lock(&mu_);
  return lines_;
}

Status EventLog::AppendLine(std::string line) {
  line.push_back('\n');
  MutexLock lock(&mu_);
  // Append then Flush: the line reaches the OS in one write(2), so concurrent appenders in other
  // processes cannot split it.
  Status s = file_->Append(line);
  if (s.ok()) s = file_->Flush();
  if (!s.ok()) return s.WithContext("event log " + path_);
  ++lines_;
  return Status::OK();
}

Status EventLog::LogFinding(const RuleFinding& finding) {
  json j = json::object();
  j["v"] = fmt::kEventLogVersion;
  j["event"] = finding.kind == FindingKind::kStatusChange ? std::string(fmt::kEventStatus)
                                                          : std::string(fmt::kEventFinding);
  RuleFinding stamped = finding;
  if (stamped.time_micros == 0) stamped.time_micros = static_cast<int64_t>(env_->NowMicros());
  j.update(json::parse(RuleFindingToJson(stamped, FindingKeys::kActions)));
  return AppendLine(Dump(j));
}

Status EventLog::LogAction(const ActionOutcome& o) {
  int64_t t = o.time_micros != 0 ? o.time_micros : static_cast<int64_t>(env_->NowMicros());
  json j = json::object();
  j["v"] = fmt::kEventLogVersion;
  j["event"] = std::string(fmt::kEventAction);
  j["action"] = o.action;
  j["target"] = o.target;
  if (!o.rule.empty()) j["rule"] = o.rule;
  if (o.step >= 0) j["step"] = o.step;
  j["result"] = std::string(ActionResultName(o.result));
  j["attempts"] = o.attempts;
  if (!o.detail.empty()) j["detail"] = o.detail;
  j["time_us"] = t;
  j["time"] = FormatTimeUtc(t);
  return AppendLine(Dump(j));
}

Status ReadEvents(Env* env, const std::string& path, uint64_t* offset,
                  std::vector<LoggedEvent>* out) {
  if (env == nullptr) env = Env::Default();
  TS_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(path));
  if (size <= *offset) return Status::OK();
  // At most kMaxReadBytes per call; the caller calls again for the rest.
  constexpr uint64_t kMaxReadBytes = 16 << 20;
  TS_ASSIGN_OR_RETURN(std::string data,
                      env->ReadRange(path, *offset, std::min(size - *offset, kMaxReadBytes)));
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) break;  // a line still being written
    std::string_view line(data.data() + pos, nl - pos);
    const uint64_t line_offset = *offset + pos;
    pos = nl + 1;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("event") || !j["event"].is_string()) {
      return Status::Corruption(
          "event log " + path + " at byte " + std::to_string(line_offset) +
          ": not a JSON object with an \"event\" key: " + std::string(line.substr(0, 120)));
    }
    LoggedEvent ev;
    ev.event = j["event"].get<std::string>();
    if (auto it = j.find("time_us"); it != j.end() && it->is_number_integer()) {
      ev.time_micros = it->get<int64_t>();
    }
    if (ev.event == fmt::kEventFinding || ev.event == fmt::kEventStatus) {
      Result<RuleFinding> f = RuleFindingFromJson(line);
      if (!f.ok()) {
        return f.status().WithContext("event log " + path + " at byte " +
                                      std::to_string(line_offset));
      }
      ev.finding = std::move(f).value();
    } else if (ev.event == fmt::kEventAction) {
      ActionOutcome o;
      try {
        o.action = j.value("action", "");
        o.target = j.value("target", "");
        o.rule = j.value("rule", "");
        int64_t attempts = 0;
        if (!IntKey(j, "step", -1, &o.step) || !IntKey(j, "attempts", 0, &attempts) ||
            attempts < 0 || attempts > 1000000) {
          return Status::Corruption("event log " + path + " at byte " +
                                    std::to_string(line_offset) +
                                    ": \"step\" or \"attempts\" is not an integer in range");
        }
        o.attempts = static_cast<int>(attempts);
        auto result = ActionResultFromName(j.value("result", ""));
        if (!result) {
          return Status::Corruption("event log " + path + " at byte " +
                                    std::to_string(line_offset) + ": unknown action result");
        }
        o.result = *result;
        o.detail = j.value("detail", "");
      } catch (const json::exception& e) {
        return Status::Corruption("event log " + path + " at byte " + std::to_string(line_offset) +
                                  ": " + e.what());
      }
      o.time_micros = ev.time_micros;
      ev.action = std::move(o);
    }
    out->push_back(std::move(ev));
  }
  *offset += pos;
  return Status::OK();
}

}  // namespace trainscope
