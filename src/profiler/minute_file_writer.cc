#include "profiler/minute_file_writer.h"

#include "trainscope/profiler_format.h"

namespace trainscope {

Status MinuteFileWriter::Append(uint64_t ts_us, std::string_view lines) {
  const int64_t secs = static_cast<int64_t>(ts_us / 1000000);
  const int64_t minute = secs - secs % profiler_format::kSystemFileSeconds;
  if (file_ == nullptr || minute != minute_) {
    Status s = Close();
    (void)s;  // a failed close of the previous minute is reported by its last Append
    std::string path =
        JoinPath(base_dir_, profiler_format::SystemMetricsFilePath(secs, node_index_));
    TS_RETURN_IF_ERROR(env_->CreateDirs(std::string(Dirname(path))));
    auto file = env_->NewAppendableFile(path);
    if (!file.ok()) return file.status();
    file_ = std::move(file).value();
    path_ = std::move(path);
    minute_ = minute;
  }
  Status s = file_->Append(lines);
  if (s.ok()) s = file_->Flush();
  if (!s.ok()) {
    (void)file_->Close();  // dropped: `s` says why
    file_.reset();
    path_.clear();
  }
  return s;
}

Status MinuteFileWriter::Close() {
  if (file_ == nullptr) return Status::OK();
  Status s = file_->Close();
  file_.reset();
  path_.clear();
  minute_ = -1;
  return s;
}

}  // namespace trainscope
