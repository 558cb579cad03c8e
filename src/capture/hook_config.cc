#include "trainscope/hook_config.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace trainscope {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kModePrefixes[] = {"train.", "eval.", "predict.", "global."};
constexpr Mode kPrefixModes[] = {Mode::kTrain, Mode::kEval, Mode::kPredict, Mode::kGlobal};
constexpr std::string_view kSaveKeys[] = {"save_interval", "save_steps", "start_step", "end_step"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string Shown(const Json& v) {
  if (!v.is_string()) return v.dump();
  // Appended piece by piece: "'" + std::string&& trips GCC 12's -Wrestrict at -O3 (a false
  // positive once this is inlined).
  std::string out = "'";
  out += v.get_ref<const std::string&>();
  out += '\'';
  return out;
}

Result<int64_t> ParseInt(const std::string& key, const Json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  if (v.is_string()) {
    const std::string_view s = Trim(v.get_ref<const std::string&>());
    int64_t out = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && ptr == s.data() + s.size() && !s.empty()) return out;
  }
  return Status::InvalidArgument(key + ": " + Shown(v) + " is not a whole number; write e.g. \"" +
                                 key.substr(key.rfind('.') + 1) + "\": \"100\"");
}

Result<std::vector<std::string>> ParseStringList(const std::string& key, const Json& v) {
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_string()) {
        return Status::InvalidArgument(key + ": list entries must be strings, found " + e.dump());
      }
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  if (!v.is_string()) {
    return Status::InvalidArgument(key + ": expected a comma-separated string, found " + v.dump());
  }
  std::string_view s = v.get_ref<const std::string&>();
  while (true) {
    const size_t comma = s.find(',');
    const std::string_view token = Trim(s.substr(0, comma));
    if (!token.empty()) out.emplace_back(token);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

Result<std::vector<int64_t>> ParseIntList(const std::string& key, const Json& v) {
  std::vector<int64_t> out;
  if (v.is_array()) {
    for (const auto& e : v) {
      TS_ASSIGN_OR_RETURN(int64_t x, ParseInt(key, e));
      out.push_back(x);
    }
    return out;
  }
  TS_ASSIGN_OR_RETURN(auto tokens, ParseStringList(key, v));
  for (const auto& t : tokens) {
    TS_ASSIGN_OR_RETURN(int64_t x, ParseInt(key, Json(t)));
    out.push_back(x);
  }
  return out;
}

Result<bool> ParseBool(const std::string& key, const Json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return ParseConfigBool(key, v.dump());
  if (v.is_string()) return ParseConfigBool(key, v.get_ref<const std::string&>());
  return Status::InvalidArgument(key + ": " + v.dump() + " is not a boolean; use true or false");
}

Result<std::string> ParseString(const std::string& key, const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  return Status::InvalidArgument(key + ": expected a string, found " + v.dump());
}

// The save parameters of one block, possibly partial.
struct PartialSaveMode {
  std::optional<int64_t> save_interval, start_step;
  std::optional<std::optional<int64_t>> end_step;  // set to nullopt = explicitly no end
  std::optional<std::vector<int64_t>> save_steps;

  void MergeFrom(const PartialSaveMode& o) {  // o wins
    if (o.save_interval) save_interval = o.save_interval;
    if (o.start_step) start_step = o.start_step;
    if (o.end_step) end_step = o.end_step;
    if (o.save_steps) save_steps = o.save_steps;
  }
  SaveConfigMode Finish() const {
    SaveConfigMode m;
    if (save_interval) m.save_interval = *save_interval;
    if (start_step) m.start_step = *start_step;
    if (end_step) m.end_step = *end_step;
    if (save_steps) m.save_steps = *save_steps;
    return m;
  }
};

bool IsNullish(const Json& v) {
  if (v.is_null()) return true;
  if (!v.is_string()) return false;
  const std::string_view s = Trim(v.get_ref<const std::string&>());
  return s.empty() || s == "None" || s == "null";
}

// Reads "<prefix>save_interval" etc. from `block`.
Result<PartialSaveMode> ParseSaveParams(const std::string& where, const Json& block,
                                        std::string_view prefix) {
  PartialSaveMode p;
  for (std::string_view k : kSaveKeys) {
    const std::string key = std::string(prefix) + std::string(k);
    auto it = block.find(key);
    if (it == block.end()) continue;
    const std::string path = where + "." + key;
    if (k == "save_interval") {
      TS_ASSIGN_OR_RETURN(p.save_interval, ParseInt(path, *it));
    } else if (k == "start_step") {
      TS_ASSIGN_OR_RETURN(p.start_step, ParseInt(path, *it));
    } else if (k == "end_step") {
      if (IsNullish(*it)) {
        p.end_step = std::optional<int64_t>();
      } else {
        TS_ASSIGN_OR_RETURN(int64_t e, ParseInt(path, *it));
        p.end_step = std::optional<int64_t>(e);
      }
    } else {
      TS_ASSIGN_OR_RETURN(p.save_steps, ParseIntList(path, *it));
    }
  }
  return p;
}

// Per-mode partial parameters: the unprefixed keys overridden by the mode-prefixed ones.
Result<std::array<PartialSaveMode, 4>> ParseModeParams(const std::string& where,
                                                       const Json& block) {
  TS_ASSIGN_OR_RETURN(PartialSaveMode base, ParseSaveParams(where, block, ""));
  std::array<PartialSaveMode, 4> out;
  for (size_t i = 0; i < 4; ++i) {
    TS_ASSIGN_OR_RETURN(PartialSaveMode prefixed, ParseSaveParams(where, block, kModePrefixes[i]));
    out[i] = base;
    out[i].MergeFrom(prefixed);
  }
  return out;
}

SaveConfig FinishSaveConfig(const std::array<PartialSaveMode, 4>& modes, const std::string& what,
                            Status* status) {
  SaveConfig c;
  for (size_t i = 0; i < 4; ++i) c.set_mode(kPrefixModes[i], modes[i].Finish());
  *status = c.Validate(what);
  return c;
}

bool IsSaveKey(std::string_view key) {
  for (auto p : kModePrefixes) {
    if (key.substr(0, p.size()) == p) {
      key.remove_prefix(p.size());
      break;
    }
  }
  for (auto k : kSaveKeys) {
    if (key == k) return true;
  }
  return false;
}

void WarnUnknownKeys(const std::string& where, const Json& block,
                     std::initializer_list<std::string_view> known,
                     std::vector<std::string>* warnings) {
  for (auto it = block.begin(); it != block.end(); ++it) {
    const std::string& key = it.key();
    if (IsSaveKey(key)) continue;
    bool ok = false;
    for (auto k : known) ok = ok || key == k;
    if (!ok)
      warnings->push_back(where + ": unknown key '" + key + "' is ignored; check its spelling");
  }
}

// "reductions" (+ save_raw_tensor, save_shape) of a block, if present.
Result<std::optional<ReductionConfig>> ParseReductionBlock(const std::string& where,
                                                           const Json& block) {
  auto it = block.find("reductions");
  if (it == block.end()) return std::optional<ReductionConfig>();
  bool raw = false, shape = false;
  if (auto r = block.find("save_raw_tensor"); r != block.end()) {
    TS_ASSIGN_OR_RETURN(raw, ParseBool(where + ".save_raw_tensor", *r));
  }
  if (auto s = block.find("save_shape"); s != block.end()) {
    TS_ASSIGN_OR_RETURN(shape, ParseBool(where + ".save_shape", *s));
  }
  std::string list;
  if (it->is_array()) {
    TS_ASSIGN_OR_RETURN(auto items, ParseStringList(where + ".reductions", *it));
    for (const auto& x : items) list += x + ",";
  } else {
    TS_ASSIGN_OR_RETURN(list, ParseString(where + ".reductions", *it));
  }
  auto parsed = ReductionConfig::Parse(list, raw, shape);
  if (!parsed.ok()) return parsed.status().WithContext(where + ".reductions");
  return std::optional<ReductionConfig>(std::move(parsed).value());
}

}  // namespace

Result<bool> ParseConfigBool(std::string_view key, std::string_view value) {
  const std::string_view v = Trim(value);
  if (v == "true" || v == "True" || v == "TRUE" || v == "1") return true;
  if (v == "false" || v == "False" || v == "FALSE" || v == "0") return false;
  return Status::InvalidArgument(std::string(key) + ": '" + std::string(value) +
                                 "' is not a boolean; use true or false");
}

Status HookConfig::Validate() const {
  TS_RETURN_IF_ERROR(save_config.Validate("save_config"));
  TS_RETURN_IF_ERROR(reduction_config.Validate("reduction_config"));
  if (rank < -1 || world_size < -1 || world_size == 0 || (world_size > 0 && rank >= world_size)) {
    return Status::InvalidArgument("worker rank " + std::to_string(rank) + " of world size " +
                                   std::to_string(world_size) +
                                   ": rank must be in [0, world_size) (or -1 to read RANK and "
                                   "WORLD_SIZE from the environment)");
  }
  for (const auto& c : collections.collections()) {
    if (c->save_config())
      TS_RETURN_IF_ERROR(c->save_config()->Validate("collection '" + c->name() + "'"));
    if (c->reduction_config()) {
      TS_RETURN_IF_ERROR(c->reduction_config()->Validate("collection '" + c->name() + "'"));
    }
  }
  return Status::OK();
}

namespace {

// "line L, column C" (1-based) of the byte at 0-based `offset` in `text`.
std::string LineAndColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

Result<HookConfig> ParseHookConfigJson(std::string_view text, std::string_view source) {
  const std::string src(source);
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // e.byte counts the bytes read, the offending one included. nlohmann's text repeats the
    // position after an id ("[json.exception.parse_error.101] parse error at line 3, column
    // 29: syntax error ..."): only what follows it is kept.
    std::string detail = e.what();
    if (size_t at = detail.find("column"); at != std::string::npos) {
      if (size_t colon = detail.find(": ", at); colon != std::string::npos) {
        detail = detail.substr(colon + 2);
      }
    }
    return Status::InvalidArgument(src + ": not valid JSON at " +
                                   LineAndColumn(text, e.byte > 0 ? e.byte - 1 : 0) + ": " +
                                   detail);
  }
  if (!root.is_object()) {
    return Status::InvalidArgument(src +
                                   ": not a JSON object; a hook configuration looks like "
                                   "{\"LocalPath\": \"/out\", \"HookParameters\": {...}}");
  }
  HookConfig c;
  // smdebug's default folder, only inside a SageMaker job (smdebug's is_sagemaker_job: the
  // platform sets TRAINING_JOB_NAME). Elsewhere no LocalPath leaves out_dir empty and
  // LoadHookConfigFile refuses the file, rather than writing to /opt/ml unasked.
  if (const char* job = std::getenv("TRAINING_JOB_NAME"); job != nullptr) {
    c.out_dir = std::string(kSageMakerOutDir);
  }
  if (auto it = root.find("LocalPath"); it != root.end()) {
    TS_ASSIGN_OR_RETURN(c.out_dir, ParseString(src + ": LocalPath", *it));
  }
  WarnUnknownKeys(src, root,
                  {"LocalPath", "S3OutputPath", "S3Path", "HookParameters",
                   "CollectionConfigurations", "RuleConfigurations"},
                  &c.warnings);

  Json hp = Json::object();
  if (auto it = root.find("HookParameters"); it != root.end() && !it->is_null()) {
    if (!it->is_object())
      return Status::InvalidArgument(src + ": HookParameters must be an object");
    hp = *it;
  }
  const std::string hw = src + ": HookParameters";
  WarnUnknownKeys(hw, hp,
                  {"save_all", "include_regex", "include_workers", "export_tensorboard",
                   "tensorboard_dir", "reductions", "save_raw_tensor", "save_shape", "dry_run"},
                  &c.warnings);
  TS_ASSIGN_OR_RETURN(auto hook_modes, ParseModeParams(hw, hp));
  Status st;
  c.save_config = FinishSaveConfig(hook_modes, hw, &st);
  TS_RETURN_IF_ERROR(st);
  TS_ASSIGN_OR_RETURN(auto hook_red, ParseReductionBlock(hw, hp));
  if (hook_red) c.reduction_config = *hook_red;
  if (auto it = hp.find("save_all"); it != hp.end()) {
    TS_ASSIGN_OR_RETURN(c.save_all, ParseBool(hw + ".save_all", *it));
  }
  if (auto it = hp.find("dry_run"); it != hp.end()) {
    TS_ASSIGN_OR_RETURN(c.dry_run, ParseBool(hw + ".dry_run", *it));
  }
  if (auto it = hp.find("include_regex"); it != hp.end()) {
    TS_ASSIGN_OR_RETURN(c.include_regex, ParseStringList(hw + ".include_regex", *it));
  }
  if (auto it = hp.find("include_workers"); it != hp.end()) {
    TS_ASSIGN_OR_RETURN(std::string w, ParseString(hw + ".include_workers", *it));
    if (w == "one") {
      c.include_workers = IncludeWorkers::kOne;
    } else if (w == "all") {
      c.include_workers = IncludeWorkers::kAll;
    } else {
      return Status::InvalidArgument(hw + ".include_workers: '" + w +
                                     "' is not valid; use \"one\" (only worker 0 writes) or "
                                     "\"all\" (every worker writes its own files)");
    }
  }
  if (auto it = hp.find("export_tensorboard"); it != hp.end()) {
    TS_ASSIGN_OR_RETURN(c.export_tensorboard, ParseBool(hw + ".export_tensorboard", *it));
  }
  if (auto it = hp.find("tensorboard_dir"); it != hp.end() && !IsNullish(*it)) {
    TS_ASSIGN_OR_RETURN(c.tensorboard_dir, ParseString(hw + ".tensorboard_dir", *it));
  }

  if (auto it = root.find("CollectionConfigurations"); it != root.end() && !it->is_null()) {
    if (!it->is_array()) {
      return Status::InvalidArgument(src +
                                     ": CollectionConfigurations must be a list of "
                                     "{\"CollectionName\": ..., \"CollectionParameters\": {...}}");
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& entry = (*it)[i];
      const std::string ew = src + ": CollectionConfigurations[" + std::to_string(i) + "]";
      if (!entry.is_object() || !entry.contains("CollectionName")) {
        return Status::InvalidArgument(ew + ": must specify 'CollectionName'");
      }
      TS_ASSIGN_OR_RETURN(std::string name,
                          ParseString(ew + ".CollectionName", entry["CollectionName"]));
      Json params = Json::object();
      if (auto p = entry.find("CollectionParameters"); p != entry.end() && !p->is_null()) {
        if (!p->is_object()) {
          return Status::InvalidArgument(ew + ".CollectionParameters must be an object");
        }
        params = *p;
      }
      const std::string cw = src + ": collection '" + name + "'";
      WarnUnknownKeys(cw, params,
                      {"include_regex", "save_histogram", "reductions", "save_raw_tensor",
                       "save_shape", "min_save_period_ms"},
                      &c.warnings);
      auto coll = c.collections.GetOrCreate(name);
      TS_ASSIGN_OR_RETURN(auto coll_modes, ParseModeParams(cw, params));
      std::array<PartialSaveMode, 4> merged = hook_modes;
      for (size_t m = 0; m < 4; ++m) merged[m].MergeFrom(coll_modes[m]);
      SaveConfig sc = FinishSaveConfig(merged, cw, &st);
      TS_RETURN_IF_ERROR(st);
      TS_RETURN_IF_ERROR(coll->set_save_config(sc));
      TS_ASSIGN_OR_RETURN(auto coll_red, ParseReductionBlock(cw, params));
      if (coll_red) TS_RETURN_IF_ERROR(coll->set_reduction_config(*coll_red));
      if (auto r = params.find("include_regex"); r != params.end()) {
        TS_ASSIGN_OR_RETURN(auto regexes, ParseStringList(cw + ".include_regex", *r));
        for (auto& re : regexes) TS_RETURN_IF_ERROR(coll->Include(re).WithContext(src));
      }
      if (auto h = params.find("save_histogram"); h != params.end()) {
        TS_ASSIGN_OR_RETURN(bool sh, ParseBool(cw + ".save_histogram", *h));
        coll->set_save_histogram(sh);
      }
      if (auto m = params.find("min_save_period_ms"); m != params.end() && !IsNullish(*m)) {
        TS_ASSIGN_OR_RETURN(int64_t ms, ParseInt(cw + ".min_save_period_ms", *m));
        TS_RETURN_IF_ERROR(coll->set_min_save_period_ms(ms).WithContext(src));
      }
      // A collection without include_regex may still be defined by the script after the hook is
      // made (smdebug's pattern); the hook judges it at the first step and skips it, with a
      // warning, if it is still empty then.
      names.push_back(name);
    }
    c.include_collections = names;
  }
  TS_RETURN_IF_ERROR(c.Validate().WithContext(src));
  return c;
}

std::string HookConfigPathFromEnv() {
  if (const char* p = std::getenv("TRAINSCOPE_CONFIG"); p && *p) return p;
  if (const char* p = std::getenv("SMDEBUG_CONFIG_FILE_PATH"); p && *p) return p;
  return "/opt/ml/input/config/debughookconfig.json";
}

Result<HookConfig> LoadHookConfigFile(std::string path, Env* env) {
  if (path.empty()) path = HookConfigPathFromEnv();
  if (env == nullptr) env = Env::Default();
  auto text = env->ReadFile(path);
  if (!text.ok()) {
    return Status(text.status().code(),
                  "cannot read the hook configuration " + path + " (" + text.status().message() +
                      "); set TRAINSCOPE_CONFIG (or SMDEBUG_CONFIG_FILE_PATH) to a JSON file");
  }
  TS_ASSIGN_OR_RETURN(HookConfig c, ParseHookConfigJson(*text, path));
  if (c.out_dir.empty()) {
    return Status::InvalidArgument(
        path +
        " has no \"LocalPath\": set it to the folder to write the trial to (this file is "
        "the hook configuration named by TRAINSCOPE_CONFIG or SMDEBUG_CONFIG_FILE_PATH; "
        "`trainscope run --out DIR` writes one for you). smdebug's default " +
        std::string(kSageMakerOutDir) +
        " is used only inside a SageMaker job (TRAINING_JOB_NAME set)");
  }
  // smdebug's create_hook_from_json_config: inside a SageMaker job, TensorBoard is written only
  // when the platform's TensorBoard configuration exists, to its LocalPath, whatever the hook
  // parameters say.
  if (const char* job = std::getenv("TRAINING_JOB_NAME"); job != nullptr) {
    const char* tb_env = std::getenv(kSageMakerTensorboardConfigEnv);
    const std::string tb_path = tb_env != nullptr && *tb_env
                                    ? std::string(tb_env)
                                    : std::string(kSageMakerTensorboardConfig);
    c.export_tensorboard = false;
    c.tensorboard_dir.clear();
    if (env->FileExists(tb_path)) {
      auto tb_text = env->ReadFile(tb_path);
      const nlohmann::json tb =
          tb_text.ok() ? nlohmann::json::parse(*tb_text, nullptr, /*allow_exceptions=*/false)
                       : nlohmann::json();
      auto local = tb.is_object() ? tb.find("LocalPath") : tb.end();
      if (tb.is_object() && local != tb.end() && local->is_string() &&
          !local->get<std::string>().empty()) {
        c.export_tensorboard = true;
        c.tensorboard_dir = local->get<std::string>();
      } else {
        c.warnings.push_back("the TensorBoard configuration " + tb_path +
                             " gives no \"LocalPath\" string: no TensorBoard files are written");
      }
    }
  }
  c.env = env;
  return c;
}

}  // namespace trainscope
