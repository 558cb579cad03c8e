// Parsing of action specs: "stop;webhook:url=...;email:to=...,smtp=..." and smdebug's
// action_str JSON.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "trainscope/action_set.h"

namespace trainscope {
namespace {

using nlohmann::json;

constexpr std::string_view kHelp =
    "valid actions (separate several with ';'):\n"
    "  stop\n"
    "  webhook:url=http(s)://HOST[:PORT]/PATH[,timeout_ms=N][,connect_timeout_ms=N][,retries=N]"
    "[,backoff_ms=N][,queue=N][,header=Name: value]\n"
    "  email:to=ADDR[,to=ADDR...],smtp=smtp(s)://HOST[:PORT][,from=ADDR][,user=NAME]"
    "[,password_env=VAR][,starttls=true][,subject_prefix=TEXT][,timeout_ms=N][,retries=N]"
    "[,backoff_ms=N][,queue=N]\n"
    "  every action also takes on=findings|all and min_interval_s=N\n"
    "  or smdebug's JSON: {\"name\": \"stoptraining\"} / {\"name\": \"email\", \"endpoint\": "
    "\"ADDR\", \"smtp\": \"smtp://HOST:PORT\"} / {\"name\": \"webhook\", \"url\": \"...\"}, "
    "or a list of these";

constexpr std::string_view kCommonKeys[] = {"on", "min_interval_s"};
constexpr std::string_view kWebhookKeys[] = {
    "url", "timeout_ms", "connect_timeout_ms", "retries", "backoff_ms", "queue", "header"};
constexpr std::string_view kEmailKeys[] = {
    "to",         "smtp",    "from",       "user", "password_env", "starttls", "subject_prefix",
    "timeout_ms", "retries", "backoff_ms", "queue"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

Status Bad(size_t index, std::string_view item, const std::string& why) {
  return Status::InvalidArgument("action " + std::to_string(index + 1) + " \"" + std::string(item) +
                                 "\": " + why + "\n" + std::string(kHelp));
}

Status SmsRefused(size_t index, std::string_view item) {
  return Status::NotSupported(
      "action " + std::to_string(index + 1) + " \"" + std::string(item) +
      "\": \"sms\" (text messages through Amazon SNS) is not supported by trainscope; use "
      "email:to=ADDR,smtp=smtp://HOST:PORT or webhook:url=... (for example an SMS gateway's "
      "webhook)");
}

// Normalises a kind name; "" when unknown.
std::string KindOf(std::string_view name) {
  std::string k = Lower(Trim(name));
  if (k == "stop" || k == "stoptraining" || k == "stop_training") return "stop";
  if (k == "webhook" || k == "email" || k == "sms") return k;
  return "";
}

bool KeyAllowed(std::string_view kind, std::string_view key) {
  auto in = [&](auto& keys) {
    return std::find(std::begin(keys), std::end(keys), key) != std::end(keys);
  };
  if (in(kCommonKeys)) return true;
  if (kind == "webhook") return in(kWebhookKeys);
  if (kind == "email") return in(kEmailKeys);
  return false;
}

std::string AllowedKeys(std::string_view kind) {
  std::string out;
  auto add = [&](auto& keys) {
    for (std::string_view k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  };
  if (kind == "webhook") add(kWebhookKeys);
  if (kind == "email") add(kEmailKeys);
  add(kCommonKeys);
  return out;
}

Status CheckKeys(size_t index, const ActionSpec& spec) {
  for (const auto& [key, value] : spec.options) {
    if (!KeyAllowed(spec.kind, key)) {
      return Bad(index, spec.text,
                 "unknown option \"" + key + "\" for " + spec.kind +
                     " (valid: " + AllowedKeys(spec.kind) + ")");
    }
  }
  return Status::OK();
}

Result<ActionSpec> ParseItem(size_t index, std::string_view item) {
  ActionSpec spec;
  spec.text = std::string(item);
  size_t colon = item.find(':');
  std::string_view name = colon == std::string_view::npos ? item : item.substr(0, colon);
  spec.kind = KindOf(name);
  if (spec.kind.empty()) {
    return Bad(index, item, "unknown action \"" + std::string(Trim(name)) + "\"");
  }
  if (spec.kind == "sms") return SmsRefused(index, item);
  if (colon != std::string_view::npos) {
    std::string_view rest = item.substr(colon + 1);
    size_t pos = 0;
    while (pos <= rest.size()) {
      size_t comma = rest.find(',', pos);
      if (comma == std::string_view::npos) comma = rest.size();
      std::string_view opt = Trim(rest.substr(pos, comma - pos));
      pos = comma + 1;
      if (opt.empty()) continue;
      size_t eq = opt.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return Bad(index, item, "option \"" + std::string(opt) + "\" is not KEY=VALUE");
      }
      spec.options.emplace_back(Lower(Trim(opt.substr(0, eq))),
                                std::string(Trim(opt.substr(eq + 1))));
    }
  }
  TS_RETURN_IF_ERROR(CheckKeys(index, spec));
  return spec;
}

// A JSON value as an option string.
Result<std::string> JsonScalar(size_t index, std::string_view item, const std::string& key,
                               const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return v.dump();
  return Bad(index, item, "key \"" + key + "\" must be a string, number or boolean");
}

Result<ActionSpec> ParseJsonItem(size_t index, const json& j) {
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!j.is_object()) return Bad(index, text, "each action must be a JSON object");
  auto name_it = j.find("name");
  if (name_it == j.end() || !name_it->is_string()) {
    return Bad(index, text, "missing \"name\" (stoptraining, email or webhook)");
  }
  ActionSpec spec;
  spec.text = text;
  spec.kind = KindOf(name_it->get<std::string>());
  if (spec.kind.empty()) {
    return Bad(index, text, "unknown action \"" + name_it->get<std::string>() + "\"");
  }
  if (spec.kind == "sms") return SmsRefused(index, text);
  for (const auto& [raw_key, value] : j.items()) {
    std::string key = Lower(raw_key);
    if (key == "name" || key == "training_job_prefix") continue;  // smdebug's; nothing to do
    if (key == "endpoint") key = spec.kind == "webhook" ? "url" : "to";
    if (key == "to" && value.is_array()) {
      for (const auto& addr : value) {
        TS_ASSIGN_OR_RETURN(std::string s, JsonScalar(index, text, key, addr));
        spec.options.emplace_back(key, s);
      }
      continue;
    }
    if (key == "header" && value.is_array()) {
      for (const auto& h : value) {
        TS_ASSIGN_OR_RETURN(std::string s, JsonScalar(index, text, key, h));
        spec.options.emplace_back(key, s);
      }
      continue;
    }
    TS_ASSIGN_OR_RETURN(std::string s, JsonScalar(index, text, key, value));
    spec.options.emplace_back(key, s);
  }
  TS_RETURN_IF_ERROR(CheckKeys(index, spec));
  return spec;
}

}  // namespace

std::string_view ActionSpecHelp() { return kHelp; }

Result<std::vector<ActionSpec>> ParseActionSpecs(std::string_view spec) {
  std::vector<ActionSpec> out;
  std::string_view s = Trim(spec);
  if (s.empty()) return out;
  if (s.front() == '{' || s.front() == '[') {
    json j = json::parse(s, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      return Status::InvalidArgument("action spec is not valid JSON: " +
                                     std::string(s.substr(0, 200)) + "\n" + std::string(kHelp));
    }
    if (j.is_object()) {
      TS_ASSIGN_OR_RETURN(ActionSpec item, ParseJsonItem(0, j));
      out.push_back(std::move(item));
    } else {
      if (!j.is_array()) {
        return Status::InvalidArgument("action spec JSON must be an object or a list of objects\n" +
                                       std::string(kHelp));
      }
      for (size_t i = 0; i < j.size(); ++i) {
        TS_ASSIGN_OR_RETURN(ActionSpec item, ParseJsonItem(i, j[i]));
        out.push_back(std::move(item));
      }
    }
    return out;
  }
  size_t pos = 0, index = 0;
  while (pos <= s.size()) {
    size_t semi = s.find(';', pos);
    if (semi == std::string_view::npos) semi = s.size();
    std::string_view item = Trim(s.substr(pos, semi - pos));
    pos = semi + 1;
    if (item.empty()) continue;
    TS_ASSIGN_OR_RETURN(ActionSpec parsed, ParseItem(index, item));
    out.push_back(std::move(parsed));
    ++index;
  }
  return out;
}

}  // namespace trainscope
