#include "cli/trial_folder.h"

#include <string_view>

#include "trainscope/env.h"
#include "trainscope/profiler_format.h"
#include "trainscope/rule_output_format.h"
#include "trainscope/trial_format.h"

namespace trainscope::cli {

Status CheckTrialFolder(const std::string& dir) {
  Env* env = Env::Default();
  if (!env->IsDirectory(dir)) {
    return Status::NotFound(dir +
                            " is not a folder: give a trial folder (the --out of "
                            "`trainscope run`, or a hook's out_dir)");
  }
  const std::string_view parts[] = {
      trial_format::kCollectionsDir,      trial_format::kIndexDir,
      trial_format::kEventsDir,           trial_format::kEndOfJobFile,
      profiler_format::kSystemDir,        profiler_format::kFrameworkDir,
      rule_output_format::kRuleOutputDir, ".trainscope"};
  for (std::string_view p : parts) {
    if (env->FileExists(JoinPath(dir, p))) return Status::OK();
  }
  return Status::NotFound(
      dir +
      " is not a trial: a trial folder holds what a training's hook wrote (collections/, "
      "index/, events/, training_job_end.ts; system/ and framework/ for profiler data) "
      "and what `trainscope run` and its rules wrote (.trainscope/, rule-output/), and "
      "this folder holds none of them; give the --out of `trainscope run` or a hook's "
      "out_dir");
}

}  // namespace trainscope::cli
