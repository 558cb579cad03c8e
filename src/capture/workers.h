// Worker identity and the end-of-training marker when several workers write one trial.
//
// Identity: rank and world size from the configuration, else from the environment variables
// RANK and WORLD_SIZE (torchrun, torch.distributed launchers), else rank 0 of 1.
//
// End marker (fixes smdebug's race, where the first worker to close wrote training_job_end.ts
// while others were still writing, or before a slow worker had even created its hook): a
// worker that has closed with all its steps on disk records <out_dir>/.trainscope/done/<worker>,
// then counts the records; the worker that finds all world_size of them writes the marker. The
// record is written before counting, so whichever worker finishes last sees every record.
//
// Thread safety: free functions; safe to call from any thread.
#pragma once

#include <string>

#include "trainscope/env.h"
#include "trainscope/status.h"

namespace trainscope::capture {

struct WorkerIdentity {
  int rank = 0;
  int world_size = 1;
};

// `rank`/`world_size` of -1 are read from RANK/WORLD_SIZE. InvalidArgument if the environment
// holds something that is not a number, or rank >= world size.
Result<WorkerIdentity> ResolveWorker(int rank, int world_size);

// "worker_<rank>".
std::string WorkerName(int rank);

// Folder of the per-worker done records.
std::string DoneDir(const std::string& out_dir);

// Records `worker` as done; writes the end marker if `world_size` workers are done. Returns
// whether this call wrote the marker.
Result<bool> MarkDoneAndMaybeEnd(Env* env, const std::string& out_dir, const std::string& worker,
                                 int world_size);

}  // namespace trainscope::capture
