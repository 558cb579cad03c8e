// Whether a folder given to `status`, `ls` or `timeline` is a trial, and the message that says
// so when it is not.
#pragma once

#include <string>

#include "trainscope/status.h"

namespace trainscope::cli {

// OK when `dir` holds anything a trial holds: what a hook writes (collections/, index/, events/,
// training_job_end.ts; system/ and framework/ for profiler data) or what `trainscope run` and its
// rules write (.trainscope/, rule-output/). Otherwise NotFound with a message naming `dir` and
// saying what a trial holds: "<dir> is not a folder" when it is missing or a file, else
// "<dir> is not a trial: ...".
Status CheckTrialFolder(const std::string& dir);

}  // namespace trainscope::cli
