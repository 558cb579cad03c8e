// TensorBoardWriter: scalars and histograms in TensorBoard's event-file format, readable by
// TensorBoard's own reader (docs/formats/tensorboard.md).
//
// One file per writer: <dir>/<mode>/events.out.tfevents.<unix_seconds>.<host>.<pid>.trainscope,
// whose first record is Event{file_version: "brain.Event:2"}. Unlike events/, every record carries
// the real masked CRC32C of its payload. Records are appended and flushed at Flush()/Close().
//
// Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "trainscope/env.h"
#include "trainscope/modes.h"
#include "trainscope/reductions.h"
#include "trainscope/status.h"

namespace trainscope {

class TensorBoardWriter {
 public:
  // `dir` is the tensorboard folder (e.g. <trial>/tensorboard). Nothing is created until the
  // first write.
  static Result<std::unique_ptr<TensorBoardWriter>> Open(const std::string& dir,
                                                         Env* env = nullptr);
  ~TensorBoardWriter();

  // tag is cleaned as smdebug does ([^-/\w.] -> '_').
  Status AddScalar(Mode mode, std::string_view tag, int64_t step, double value,
                   double wall_time_s = 0 /* 0 = now */);
  Status AddHistogram(Mode mode, std::string_view tag, int64_t step, const Histogram& h,
                      double wall_time_s = 0);
  Status Flush();
  Status Close();

  // Path of the file written for `mode` (empty if none yet).
  std::string FilePath(Mode mode) const;

 private:
  struct File;
  TensorBoardWriter(std::string dir, Env* env);
  Result<File*> FileFor(Mode mode);
  Status Append(Mode mode, std::string_view event_payload);
  std::string dir_;
  Env* env_;
  std::map<Mode, std::unique_ptr<File>> files_;
};

// Cleans a tag as smdebug does: every char outside [-/\w.] becomes '_'.
std::string CleanTensorBoardTag(std::string_view tag);

}  // namespace trainscope
