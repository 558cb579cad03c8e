#include "profiler/reader_util.h"

namespace trainscope::reader_util {

void AddProblem(ReaderStats* stats, std::string msg) {
  if (stats->problems.size() < 20) stats->problems.push_back(std::move(msg));
}

void ListFilesRecursive(Env* env, const std::string& dir, int max_depth,
                        std::vector<std::string>* out) {
  auto children = env->GetChildren(dir);
  if (!children.ok()) return;
  for (const std::string& name : *children) {
    std::string path = JoinPath(dir, name);
    if (env->IsDirectory(path)) {
      if (max_depth > 0) ListFilesRecursive(env, path, max_depth - 1, out);
    } else {
      out->push_back(std::move(path));
    }
  }
}

}  // namespace trainscope::reader_util
