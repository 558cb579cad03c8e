// HookConfig: everything a Hook is constructed from, and smdebug's JSON hook configuration.
//
// JSON (smdebug/core/json_config.py; every value may also be a string, lists may be
// comma-separated strings):
//   {"LocalPath": "/out/dir",
//    "HookParameters": {"save_all": "false", "include_regex": "r1,r2", "include_workers": "one",
//                       "export_tensorboard": "true", "tensorboard_dir": "/tb",
//                       "reductions": "min,max,abs_mean,l2_norm", "save_raw_tensor": "false",
//                       "save_shape": "false", "save_interval": "100", "save_steps": "1,2",
//                       "start_step": "0", "end_step": "1000", "train.save_interval": "10", ...},
//    "CollectionConfigurations": [{"CollectionName": "weights",
//                                  "CollectionParameters": {"include_regex": "...",
//                                    "save_histogram": "true", "reductions": "...",
//                                    "eval.save_interval": "5", ...}}]}
// Rules: a "train.|eval.|predict.|global." key overrides the unprefixed key for that mode; a
// collection's save parameters override the hook's, per mode; save_raw_tensor and save_shape
// count only next to "reductions" in the same block (without "reductions" the hook saves raw
// tensors); the collections listed become include_collections. Unknown keys are reported in
// `warnings` (a typo should not pass silently) but do not fail. trainscope's one extension:
// "min_save_period_ms" in CollectionParameters (collection.h; `trainscope run` writes it).
//
// Thread safety: values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/collection.h"
#include "trainscope/env.h"
#include "trainscope/reduction_config.h"
#include "trainscope/save_config.h"
#include "trainscope/status.h"

namespace trainscope {

enum class IncludeWorkers { kOne, kAll };

struct HookConfig {
  std::string out_dir;
  bool export_tensorboard = false;
  std::string tensorboard_dir;  // empty: <out_dir>/tensorboard when export_tensorboard
  bool dry_run = false;         // plan and compute, write nothing
  // Default for collections without their own (smdebug: ReductionConfig(save_raw_tensor=True)).
  ReductionConfig reduction_config = [] {
    ReductionConfig c;
    c.save_raw_tensor = true;
    return c;
  }();
  // Default for collections without their own; unset modes become SaveConfigMode{}.
  SaveConfig save_config;
  std::vector<std::string> include_regex;  // goes into collection "default", then included
  // Collections to save, always unioned with default_include_collections. nullopt = only those.
  std::optional<std::vector<std::string>> include_collections;
  std::vector<std::string> default_include_collections = {"losses"};
  bool save_all = false;
  IncludeWorkers include_workers = IncludeWorkers::kOne;
  // The collections; configured collections are added or changed here.
  CollectionManager collections = CollectionManager::WithPyTorchDefaults();

  // Worker identity. -1: from env RANK and WORLD_SIZE (else 0 and 1).
  int rank = -1;
  int world_size = -1;

  // Writer options.
  Env* env = nullptr;  // nullptr = Env::Default()
  size_t max_queue_bytes = size_t{1} << 30;
  int64_t max_queue_steps = 8;        // WriterOptions::max_queue_steps (writer.h)
  bool drop_steps_when_full = false;  // false: block the training thread when the queue is full
  bool quiet = false;                 // do not print errors and warnings to stderr
  // The stop file (hook.h, "Stop requests") is looked for at a Step() when at least this much
  // time (Env::NowMicros) has passed since the last look; 0: at every Step(). One access(2) is
  // a few microseconds, about 1 % of a 0.3 ms step; every 10 ms is invisible next to a rule's
  // verdict latency (up to a second) and costs a clock read on the other steps.
  int64_t stop_check_interval_ms = 10;

  // Non-fatal findings of the JSON parser (unknown keys), printed once by the Hook.
  std::vector<std::string> warnings;

  // InvalidArgument saying what to change (bad save/reduction config, include_workers...).
  Status Validate() const;
};

// smdebug's default out_dir, used for a configuration without LocalPath inside a SageMaker job.
inline constexpr std::string_view kSageMakerOutDir = "/opt/ml/output/tensors";
// SageMaker's TensorBoard configuration ({"LocalPath": "<dir>"}): the file this variable names,
// else kSageMakerTensorboardConfig. Read by LoadHookConfigFile inside a SageMaker job only.
inline constexpr const char* kSageMakerTensorboardConfigEnv = "TENSORBOARD_CONFIG_FILE_PATH";
inline constexpr std::string_view kSageMakerTensorboardConfig =
    "/opt/ml/input/config/tensorboardoutputconfig.json";

// Parses smdebug's JSON hook configuration (see above). `source` names the file in messages.
// Without "LocalPath", out_dir is kSageMakerOutDir inside a SageMaker job (TRAINING_JOB_NAME
// set, smdebug's test) and empty elsewhere.
Result<HookConfig> ParseHookConfigJson(std::string_view json, std::string_view source = "config");
// Reads and parses a file. An empty path means HookConfigPathFromEnv(). InvalidArgument naming
// the file and LocalPath when it gives no out_dir (no LocalPath outside SageMaker). Inside a
// SageMaker job (TRAINING_JOB_NAME set), as smdebug does: TensorBoard is exported, to its
// LocalPath, exactly when SageMaker's TensorBoard configuration file exists
// (TENSORBOARD_CONFIG_FILE_PATH, else kSageMakerTensorboardConfig); the hook parameters'
// export_tensorboard and tensorboard_dir are then not used.
Result<HookConfig> LoadHookConfigFile(std::string path = "", Env* env = nullptr);
// TRAINSCOPE_CONFIG if set, else SMDEBUG_CONFIG_FILE_PATH, else
// /opt/ml/input/config/debughookconfig.json (smdebug's default).
std::string HookConfigPathFromEnv();

// Parses smdebug's booleans: true/false, "true"/"false", "True"/"False" (and 1/0).
Result<bool> ParseConfigBool(std::string_view key, std::string_view value);

}  // namespace trainscope
