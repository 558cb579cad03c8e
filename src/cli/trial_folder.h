// Whether a folder given to `status`, `ls` or `timeline` is a trial, and the message that says
// so when it is not; whether a training still writes it.
#pragma once

#include <optional>
#include <string>

#include "trainscope/status.h"

namespace trainscope::cli {

// OK when `dir` holds anything a trial holds: what a hook writes (collections/, index/, events/,
// training_job_end.ts; system/ and framework/ for profiler data) or what `trainscope run` and its
// rules write (.trainscope/, rule-output/). Otherwise NotFound with a message naming `dir` and
// saying what a trial holds: "<dir> is not a folder" when it is missing or a file, else
// "<dir> is not a trial: ...".
Status CheckTrialFolder(const std::string& dir);

// Who still writes trial `dir`, asked of <dir>/.trainscope/run.lock (docs/formats/run_lock.md: a
// `trainscope run` holds it exclusively, hooks started without one hold it shared) with a
// non-blocking exclusive flock(2), released at once: an empty string when nobody holds it, else
// the holder described (the hooks' pids and commands from their worker locks, or "a `trainscope
// run`"); nullopt when the folder has no such file (a trial written by smdebug, or with
// TRAINSCOPE_LOCK=0: there is nobody to ask).
std::optional<std::string> FolderWriter(const std::string& dir);

}  // namespace trainscope::cli
