// Reading the collections files of a trial: collections/000000000/<worker>_collections.json
// (reference: smdebug.md 1.3). Private to the store module.
//
// Thread safety: pure functions (FindCollectionsFiles only reads the file system through Env).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/status.h"
#include "trainscope/trial.h"

namespace trainscope {

struct CollectionsFile {
  int num_workers = 1;                      // _meta.num_workers (1 when absent)
  std::vector<CollectionInfo> collections;  // sorted by name
  std::map<std::string, bool> parameters;   // _meta.parameters: tensor name -> trainable
  std::vector<ModuleInfo> modules;          // _meta.modules, in forward order
  std::vector<std::string> environments;    // _meta.environments
};

// Parses one collections file. Corruption naming `path_for_errors` (and the byte offset when the
// JSON itself does not parse) if it is not a collections file.
Result<CollectionsFile> ParseCollectionsFile(std::string_view json,
                                             std::string_view path_for_errors);

struct CollectionsListing {
  std::vector<std::string> paths;    // sorted
  std::vector<std::string> workers;  // worker of each path, same order
};
// Lists <root>/collections/000000000/*_collections.json. An absent folder gives an empty listing.
Result<CollectionsListing> FindCollectionsFiles(Env* env, const std::string& root);

}  // namespace trainscope
