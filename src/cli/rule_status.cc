#include "cli/rule_status.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "trainscope/env.h"
#include "trainscope/rule_output_format.h"
#include "trainscope/stop_signal.h"

namespace trainscope::cli {
namespace {

// Larger files are not what a rule wrote (a status, a finding and a stop request are a few KiB).
constexpr std::streamsize kMaxJsonFileBytes = 1 << 20;

enum class ReadResult { kOk, kMissing, kBad };

// The first kMaxJsonFileBytes (+1, to tell a larger file) of the regular file at `path`. A
// missing file is kMissing; a FIFO, a device (a symlink to /dev/zero) or an unreadable file is
// kBad with *error saying which.
ReadResult ReadBounded(const std::string& path, std::string* text, std::string* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return ReadResult::kMissing;
    *error = std::string("cannot be read: ") + std::strerror(errno);
    return ReadResult::kBad;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = "is not a regular file (a rule writes a plain JSON file here)";
    return ReadResult::kBad;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = std::string("cannot be read: ") + std::strerror(errno);
    return ReadResult::kBad;
  }
  text->assign(static_cast<size_t>(kMaxJsonFileBytes) + 1, '\0');
  in.read(text->data(), kMaxJsonFileBytes + 1);
  text->resize(static_cast<size_t>(in.gcount()));
  return ReadResult::kOk;
}

// "parse error at line 1, column 31: syntax error ..." from nlohmann's message (without its
// "[json.exception.parse_error.101] " prefix).
std::string ParseErrorText(const std::exception& e) {
  std::string what = e.what();
  if (auto p = what.find("] "); what.rfind("[json.exception", 0) == 0 && p != std::string::npos) {
    what = what.substr(p + 2);
  }
  return what;
}

const char* TypeWord(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "a number";
    default:
      return "not a JSON value";
  }
}

// status.json checked against docs/formats/rule_output.md: the problem, or "" when it is fine.
std::string StatusFileProblem(const std::string& text, nlohmann::json* out) {
  if (text.empty()) return "is empty (0 bytes): a rule writes its status as a JSON object";
  if (text.size() > static_cast<size_t>(kMaxJsonFileBytes)) {
    return "is larger than 1 MiB: not a rule's status file";
  }
  try {
    *out = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return "is not valid JSON (damaged or cut short): " + ParseErrorText(e);
  }
  if (!out->is_object()) {
    return std::string("is not a JSON object (it is ") + TypeWord(*out) +
           "): a rule writes its status as {\"status\": ..., \"message\": ..., ...}";
  }
  auto want = [&](const char* key, bool ok, const char* type) -> std::string {
    if (!out->contains(key) || ok) return "";
    return std::string("has \"") + key + "\" as " + TypeWord((*out)[key]) + ", not " + type;
  };
  const auto& j = *out;
  for (std::string p :
       {want("status", !j.contains("status") || j["status"].is_string(), "a string"),
        want("message", !j.contains("message") || j["message"].is_string(), "a string"),
        want("finished", !j.contains("finished") || j["finished"].is_boolean(), "a boolean"),
        want("last_step", !j.contains("last_step") || j["last_step"].is_number_integer(),
             "an integer"),
        want("findings", !j.contains("findings") || j["findings"].is_number_integer(),
             "an integer"),
        want("first_finding_step",
             !j.contains("first_finding_step") || j["first_finding_step"].is_number_integer(),
             "an integer")}) {
    if (!p.empty()) return p;
  }
  if (j.contains("status")) {
    const std::string s = j["status"].get<std::string>();
    for (const char* known : {"InProgress", "IssuesFound", "NoIssuesFound", "Error", "Stopped"}) {
      if (s == known) return "";
    }
    return "has \"status\" \"" + s +
           "\", not one of InProgress, IssuesFound, NoIssuesFound, Error, Stopped";
  }
  return "";
}

nlohmann::json FirstLine(const std::string& path) {
  std::string text, error;
  if (ReadBounded(path, &text, &error) != ReadResult::kOk) return nullptr;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
  }
  return nullptr;
}

}  // namespace

std::optional<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::string text, error;
  if (ReadBounded(path, &text, &error) != ReadResult::kOk) return std::nullopt;
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::string JsonString(const nlohmann::json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

int64_t JsonInt(const nlohmann::json& j, const char* key, int64_t fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<RuleStatusView> ReadRuleStatuses(const std::string& trial_dir) {
  namespace fmt = rule_output_format;
  Env* env = Env::Default();
  std::string root = JoinPath(trial_dir, fmt::kRuleOutputDir);
  std::vector<RuleStatusView> out;
  auto kids = env->GetChildren(root);
  if (!kids.ok()) return out;
  std::sort(kids->begin(), kids->end());
  for (const auto& name : *kids) {
    std::string dir = JoinPath(root, name);
    if (!env->IsDirectory(dir)) continue;
    RuleStatusView v;
    v.rule = name;
    const std::string path = JoinPath(dir, fmt::kStatusFile);
    std::string text, problem;
    nlohmann::json j;
    ReadResult r = ReadBounded(path, &text, &problem);
    if (r == ReadResult::kOk) problem = StatusFileProblem(text, &j);
    if (r == ReadResult::kMissing) {
      // The rule is starting: its folder exists before its first status.
    } else if (!problem.empty()) {
      v.status = kStatusUnreadable;
      v.error = path + " " + problem;
      v.message = v.error;
    } else {
      v.raw = j;
      v.status = JsonString(j, "status", v.status);
      v.message = JsonString(j, "message");
      v.last_step = JsonInt(j, "last_step", -1);
      v.findings = JsonInt(j, "findings", 0);
      v.first_finding_step = JsonInt(j, "first_finding_step", -1);
      v.finished = j.value("finished", false);
    }
    if (v.findings > 0) v.first_finding = FirstLine(JoinPath(dir, fmt::kEventsFile));
    out.push_back(std::move(v));
  }
  return out;
}

std::optional<nlohmann::json> ReadStopRequest(const std::string& trial_dir) {
  Result<StopRequest> request = StopSignal(trial_dir).Read();
  if (!request.ok()) return std::nullopt;
  return nlohmann::json::parse(StopRequestToJson(*request), nullptr, /*allow_exceptions=*/false);
}

}  // namespace trainscope::cli
