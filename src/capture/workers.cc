#include "capture/workers.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope::capture {
namespace {

Result<int> EnvInt(const char* var, int fallback) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return fallback;
  const std::string_view s(v);
  int out = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return Status::InvalidArgument(std::string("environment variable ") + var + "='" + v +
                                   "' is not a whole number; unset it or set it to the worker's " +
                                   (std::string_view(var) == "RANK" ? "rank" : "world size"));
  }
  return out;
}

}  // namespace

Result<WorkerIdentity> ResolveWorker(int rank, int world_size) {
  WorkerIdentity id;
  if (rank >= 0) {
    id.rank = rank;
  } else {
    TS_ASSIGN_OR_RETURN(id.rank, EnvInt("RANK", 0));
  }
  if (world_size > 0) {
    id.world_size = world_size;
  } else {
    TS_ASSIGN_OR_RETURN(id.world_size, EnvInt("WORLD_SIZE", 1));
  }
  if (id.world_size < 1 || id.rank < 0 || id.rank >= id.world_size) {
    return Status::InvalidArgument("worker rank " + std::to_string(id.rank) + " of world size " +
                                   std::to_string(id.world_size) +
                                   ": the rank must be in [0, world size); check RANK and "
                                   "WORLD_SIZE (or the rank and world size given to the hook)");
  }
  return id;
}

std::string WorkerName(int rank) { return "worker_" + std::to_string(rank); }

std::string DoneDir(const std::string& out_dir) {
  return JoinPath(JoinPath(out_dir, ".trainscope"), "done");
}

Result<bool> MarkDoneAndMaybeEnd(Env* env, const std::string& out_dir, const std::string& worker,
                                 int world_size) {
  if (world_size > 1) {
    const std::string dir = DoneDir(out_dir);
    TS_RETURN_IF_ERROR(env->CreateDirs(dir));
    TS_RETURN_IF_ERROR(env->WriteFileAtomic(JoinPath(dir, worker), worker, /*sync=*/false));
    TS_ASSIGN_OR_RETURN(auto names, env->GetChildren(dir));
    int done = 0;
    for (const auto& n : names) {
      if (n.rfind("worker_", 0) == 0 && n.find('.') == std::string::npos) ++done;
    }
    if (done < world_size) return false;
  }
  TS_RETURN_IF_ERROR(WriteEndOfJob(env, out_dir));
  return true;
}

}  // namespace trainscope::capture
