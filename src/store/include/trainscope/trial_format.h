// Constants and path rules of smdebug's trial layout (docs/formats/trial.md, events.md, index.md).
// One header holds every constant of the format; writer and reader both use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainscope::trial_format {

// TFRecord framing: [u64 length][u32 masked crc32c(length)][payload][u32 footer], little-endian.
inline constexpr size_t kHeaderSize = 12;
inline constexpr size_t kFooterSize = 4;
inline constexpr size_t kFramingOverhead = kHeaderSize + kFooterSize;
// Footer smdebug writes in events/ instead of the payload CRC: masked CRC32C of "0x12345678".
inline constexpr uint32_t kMagicFooter = 0x062DC0B3u;
inline constexpr std::string_view kMagicFooterSource = "0x12345678";

// Folder and file names.
inline constexpr std::string_view kEventsDir = "events";
inline constexpr std::string_view kIndexDir = "index";
inline constexpr std::string_view kCollectionsDir = "collections";
inline constexpr std::string_view kCollectionsSubdir = "000000000";
inline constexpr std::string_view kTensorboardDir = "tensorboard";
// What rules and actions write: rule-output/<Rule>/ (rule_output.md) and the stop file
// (stop_signal.md). The one definition of the folder's name.
inline constexpr std::string_view kRuleOutputDir = "rule-output";
inline constexpr std::string_view kEndOfJobFile = "training_job_end.ts";
// "incomplete_<worker>.json" at the trial root: that worker lost steps (trial.md).
inline constexpr std::string_view kIncompletePrefix = "incomplete_";
// Readers do not read an index file larger than this (index.md, "Parsing rules"): Corruption.
inline constexpr uint64_t kMaxIndexFileBytes = uint64_t{64} << 20;
// Nor a collections file larger than this (trial.md, "Collections"): OutOfRange naming the file.
inline constexpr uint64_t kMaxCollectionsFileBytes = uint64_t{64} << 20;
inline constexpr std::string_view kIncompleteSuffix = ".json";
inline constexpr std::string_view kClaimFile = "claim.smd";
inline constexpr std::string_view kTmpSuffix = ".tmp";
inline constexpr std::string_view kEventSuffix = ".tfevents";
inline constexpr int64_t kIndexFilesPerFolder = 1000;
inline constexpr std::string_view kDefaultWorker = "worker_0";

// Plugin-data entries in Summary.Value.metadata.
inline constexpr std::string_view kPluginModeStep = "mode_step";
inline constexpr std::string_view kPluginMode = "mode";

// "events/000000000002/000000000002_worker_0.tfevents" (relative to the trial root).
std::string EventFilePath(int64_t global_step, std::string_view worker);
// "index/000000000/000000000002_worker_0.json"
std::string IndexFilePath(int64_t global_step, std::string_view worker);
// "index/000000000" for a step.
std::string IndexFolder(int64_t global_step);
// "collections/000000000/worker_0_collections.json"
std::string CollectionsFilePath(std::string_view worker);
// "incomplete_worker_0.json": the marker of a worker that lost steps (docs/formats/trial.md).
std::string IncompleteMarkerPath(std::string_view worker);

// Parses "000000000002_worker_0.json" (or .tfevents / .csv) into step and worker.
struct StepFileName {
  int64_t step;
  std::string worker;
};
std::optional<StepFileName> ParseStepFileName(std::string_view basename);

}  // namespace trainscope::trial_format
