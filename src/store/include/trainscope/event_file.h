// ReadEventFile: every tensor of one event file, in file order: smdebug's FileReader
// (smdebug.core.reader) for a single file, as smdebug's tests and tools read one step's file
// whole. Trials are read through Trial (trial.h), which goes by the index; this reads the file
// itself and needs no index.
//
// Accepts the events/ files trainscope and smdebug write (smdebug's constant record footer) and
// TensorBoard files (real CRCs): every record's framing is checked (record_io). A summary value
// holding a tensor gives that tensor; a TensorBoard simple_value gives a float32 scalar of shape
// []; histograms, images and the file_version record give nothing. The mode and mode step come
// from smdebug's plugin data (GLOBAL and the event's step when absent).
//
// Errors: NotFound for a missing file; Corruption naming the file and the record's byte offset
// for a damaged record (nothing is returned then: a partial answer would hide the damage).
//
// Thread safety: a pure function; the tensors it returns share one read-only mapping of the
// file and may be used from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/modes.h"
#include "trainscope/status.h"
#include "trainscope/tensor.h"

namespace trainscope {

struct EventFileTensor {
  std::string name;      // the summary value's tag ("Net_fc1.weight", "scalar/loss")
  int64_t step = 0;      // the event's step
  double wall_time = 0;  // the event's wall_time, epoch seconds
  Mode mode = Mode::kGlobal;
  int64_t mode_step = 0;
  Tensor value;
};

// `env` nullptr means Env::Default().
Result<std::vector<EventFileTensor>> ReadEventFile(const std::string& path, Env* env = nullptr);

}  // namespace trainscope
