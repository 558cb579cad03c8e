#include "store/collections_reader.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "trainscope/trial_format.h"

namespace trainscope {

namespace {

using nlohmann::json;

constexpr std::string_view kCollectionsSuffix = "_collections.json";

Status Bad(std::string_view path, std::string_view what) {
  return Status::Corruption(std::string(path) + ": not a collections file: " + std::string(what) +
                            " (the file may be from another tool or damaged)");
}

Result<std::vector<std::string>> StringList(const json& j, std::string_view key,
                                            std::string_view path) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null() || (it->is_boolean() && !it->get<bool>())) return out;
  if (it->is_string()) {  // tolerate a single regex written as a string
    out.push_back(it->get<std::string>());
    return out;
  }
  if (!it->is_array()) return Bad(path, std::string(key) + " is not a list");
  for (const json& v : *it) {
    if (!v.is_string()) return Bad(path, std::string(key) + " holds a non-string");
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<CollectionsFile> ParseCollectionsJson(std::string_view text, std::string_view path);

}  // namespace

Result<CollectionsFile> ParseCollectionsFile(std::string_view text, std::string_view path) {
  // nlohmann reports through exceptions; none may leave this function.
  try {
    return ParseCollectionsJson(text, path);
  } catch (const json::parse_error& e) {
    return Status::Corruption(std::string(path) + ": invalid JSON at byte " +
                              std::to_string(e.byte) + ": " + e.what());
  } catch (const json::exception& e) {  // e.g. a number too large for a double
    return Status::Corruption(std::string(path) + ": not a collections file: " + e.what());
  }
}

namespace {

Result<CollectionsFile> ParseCollectionsJson(std::string_view text, std::string_view path) {
  const json doc = json::parse(text.begin(), text.end());
  if (!doc.is_object()) return Bad(path, "the top level is not an object");
  CollectionsFile out;
  if (auto meta = doc.find("_meta"); meta != doc.end() && meta->is_object()) {
    auto nw = meta->find("num_workers");
    if (nw != meta->end()) {
      if (!nw->is_number_integer() || nw->get<int64_t>() < 1 || nw->get<int64_t>() > 65535) {
        return Bad(path, "_meta.num_workers is not an integer in [1, 65535]");
      }
      out.num_workers = static_cast<int>(nw->get<int64_t>());
    }
    // trainscope's hooks: which registered parameters are trainable and which frozen.
    if (auto ps = meta->find("parameters"); ps != meta->end() && !ps->is_null()) {
      if (!ps->is_object()) return Bad(path, "_meta.parameters is not an object");
      for (const auto& [key, trainable] : {std::pair{"trainable", true}, {"frozen", false}}) {
        TS_ASSIGN_OR_RETURN(auto names, StringList(*ps, key, path));
        for (auto& n : names) out.parameters[std::move(n)] = trainable;
      }
    }
    // trainscope's Python hook: the modules in forward order.
    if (auto ms = meta->find("modules"); ms != meta->end() && !ms->is_null()) {
      if (!ms->is_array()) return Bad(path, "_meta.modules is not a list");
      for (const json& m : *ms) {
        auto name = m.is_object() ? m.find("name") : m.end();
        auto type = m.is_object() ? m.find("type") : m.end();
        if (!m.is_object() || name == m.end() || !name->is_string() || type == m.end() ||
            !type->is_string()) {
          return Bad(path,
                     "_meta.modules holds an entry that is not {\"name\": string, "
                     "\"type\": string}");
        }
        out.modules.push_back({name->get<std::string>(), type->get<std::string>()});
      }
    }
    // trainscope's Python hook: the reinforcement-learning libraries the training imported.
    TS_ASSIGN_OR_RETURN(out.environments, StringList(*meta, "environments", path));
  }
  auto colls = doc.find("collections");
  if (colls == doc.end()) return Bad(path, "no \"collections\" key");
  if (!colls->is_object()) return Bad(path, "\"collections\" is not an object");
  for (auto it = colls->begin(); it != colls->end(); ++it) {
    const json& c = it.value();
    if (!c.is_object()) return Bad(path, "collection \"" + it.key() + "\" is not an object");
    CollectionInfo info;
    auto name = c.find("name");
    info.name = (name != c.end() && name->is_string()) ? name->get<std::string>() : it.key();
    TS_ASSIGN_OR_RETURN(info.include_regex, StringList(c, "include_regex", path));
    TS_ASSIGN_OR_RETURN(info.tensor_names, StringList(c, "tensor_names", path));
    std::sort(info.tensor_names.begin(), info.tensor_names.end());
    auto rc = c.find("reduction_config");
    info.reduction_config_json = rc == c.end() ? "null" : rc->dump();
    auto sc = c.find("save_config");
    info.save_config_json = sc == c.end() ? "null" : sc->dump();
    auto sh = c.find("save_histogram");
    info.save_histogram = (sh == c.end() || !sh->is_boolean()) ? true : sh->get<bool>();
    out.collections.push_back(std::move(info));
  }
  std::sort(out.collections.begin(), out.collections.end(),
            [](const CollectionInfo& a, const CollectionInfo& b) { return a.name < b.name; });
  return out;
}

}  // namespace

Result<CollectionsListing> FindCollectionsFiles(Env* env, const std::string& root) {
  const std::string dir =
      JoinPath(JoinPath(root, trial_format::kCollectionsDir), trial_format::kCollectionsSubdir);
  CollectionsListing out;
  auto names = env->GetChildren(dir);
  if (!names.ok()) {
    if (names.status().code() == StatusCode::kNotFound) return out;
    return names.status();
  }
  std::sort(names->begin(), names->end());
  for (const std::string& n : *names) {
    if (n.size() <= kCollectionsSuffix.size() ||
        n.compare(n.size() - kCollectionsSuffix.size(), kCollectionsSuffix.size(),
                  kCollectionsSuffix) != 0) {
      continue;
    }
    out.paths.push_back(JoinPath(dir, n));
    out.workers.push_back(n.substr(0, n.size() - kCollectionsSuffix.size()));
  }
  return out;
}

}  // namespace trainscope
