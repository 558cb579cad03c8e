// MinuteFileWriter: appends system-metrics lines to the file of the UTC minute they belong to
// (<base>/system/incremental/<YYYYMMDDHH>/<minute>.algo-<n>.json), opening the next file when the
// minute changes. Lines are appended and handed to the OS after each sample, so a live reader sees
// a sample within one interval; a crash can leave a partial last line, which readers skip.
// Private. Not thread-safe (the sampler serialises calls).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "trainscope/env.h"

namespace trainscope {

class MinuteFileWriter {
 public:
  MinuteFileWriter(Env* env, std::string base_dir, int node_index)
      : env_(env), base_dir_(std::move(base_dir)), node_index_(node_index) {}
  ~MinuteFileWriter() { (void)Close(); }  // no one to report to: owners Close() first

  // Appends `lines` (whole lines, each ending '\n') to the file of the minute of `ts_us`.
  // On error the file is dropped and reopened (appending) on the next call.
  Status Append(uint64_t ts_us, std::string_view lines);
  Status Close();
  // Path of the file being appended to (empty when none).
  const std::string& current_path() const { return path_; }

 private:
  Env* env_;
  std::string base_dir_;
  int node_index_;
  int64_t minute_ = -1;
  std::string path_;
  std::unique_ptr<WritableFile> file_;
};

}  // namespace trainscope
