// smdebug's per-step index JSON (private to the store module): docs/formats/index.md.
//
//   {"meta": {"mode": "TRAIN", "mode_step": 2,
//             "event_file_name": "events/000000000002/000000000002_worker_0.tfevents"},
//    "tensor_payload": [{"tensorname": "x", "start_idx": 0, "length": 112, "crc32c": 305419896}],
//    "shape_payload": [{"tensorname": "x", "originalname": "x", "shape": [16, 8]}]}
//
// `meta.closure_evaluations` (optional) is trainscope's too: the loss tensors each closure
// evaluation of an optimizer step saved (index.md); so is `meta.model_calls` (optional), the
// calls of the model in the step.
// `crc32c` is trainscope's extra key: the plain (unmasked) CRC32C of the record's payload.
// smdebug ignores unknown keys; our reader checks it when present.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/modes.h"
#include "trainscope/status.h"
#include "trainscope/trial.h"

namespace trainscope {

struct IndexTensorEntry {
  std::string tensorname;
  uint64_t start_idx = 0;          // offset of the framed record in the event file
  uint64_t length = 0;             // whole framed record (header + payload + footer)
  std::optional<uint32_t> crc32c;  // CRC32C of the payload; absent in smdebug's files
};

struct IndexShapeEntry {
  std::string tensorname;
  std::string originalname;
  std::vector<int64_t> shape;
};

struct IndexFile {
  Mode mode = Mode::kGlobal;
  int64_t mode_step = 0;
  std::string event_file_name;  // relative to the trial root; empty = absent (shapes only)
  std::vector<IndexTensorEntry> tensors;
  std::vector<IndexShapeEntry> shapes;
  // meta.closure_evaluations (trainscope's, optional; empty = absent).
  std::vector<ClosureStep> closures;
  // meta.model_calls (trainscope's, optional): calls of the model in the step; written when 2 or
  // more, 0 = absent.
  int64_t model_calls = 0;
};

// Serialises `index` as smdebug's IndexWriter does (json.dumps key order and separators), plus
// the crc32c keys. Tensor names must be valid UTF-8 (the writer checks); control characters,
// quotes and backslashes are escaped.
std::string EncodeIndexFile(const IndexFile& index);

// Parses an index file. Corruption naming `path_for_errors` if it is not JSON, lacks "meta" or
// both payload sections, has a field of the wrong type, names an unknown mode, has a negative
// offset/length, or an event_file_name that is absolute or climbs out of the trial ("..").
// Unknown keys are ignored. Never throws.
Result<IndexFile> ParseIndexFile(std::string_view json, std::string_view path_for_errors);

// Appends `s` to *out as a JSON string literal (with quotes).
void AppendJsonString(std::string_view s, std::string* out);
// True if `s` is valid UTF-8 (what JSON files and protobuf string fields require).
bool IsValidUtf8(std::string_view s);

}  // namespace trainscope
