// TensorBoardWriter (include/trainscope/tensorboard.h).
#include "trainscope/tensorboard.h"

#include <unistd.h>

#include <cstdio>

#include "store/event_codec.h"
#include "store/record_io.h"
#include "trainscope/time_format.h"
#include "trainscope/trial_format.h"

namespace trainscope {

struct TensorBoardWriter::File {
  std::string path;
  std::unique_ptr<WritableFile> file;
  bool closed = false;
};

namespace {

constexpr std::string_view kFileVersion = "brain.Event:2";

// The host name as a file name part ('/' is not allowed in one).
std::string HostNameForFile() {
  std::string h = HostName();
  for (char& c : h) {
    if (c == '/') c = '_';
  }
  return h;
}

}  // namespace

std::string CleanTensorBoardTag(std::string_view tag) {
  std::string out;
  out.reserve(tag.size());
  for (char c : tag) {
    const auto u = static_cast<unsigned char>(c);
    const bool keep = u >= 0x80 ||  // non-ASCII: kept (Python's \w matches letters of any script)
                      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '/' || c == '.';
    out.push_back(keep ? c : '_');
  }
  const size_t first = out.find_first_not_of('/');
  return first == std::string::npos ? std::string() : out.substr(first);
}

Result<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::Open(const std::string& dir,
                                                                   Env* env) {
  if (dir.empty()) return Status::InvalidArgument("TensorBoardWriter needs a folder path");
  return std::unique_ptr<TensorBoardWriter>(
      new TensorBoardWriter(dir, env != nullptr ? env : Env::Default()));
}

TensorBoardWriter::TensorBoardWriter(std::string dir, Env* env) : dir_(std::move(dir)), env_(env) {}

// A destructor cannot report: callers who want the error call Close() first (idempotent).
TensorBoardWriter::~TensorBoardWriter() { (void)Close(); }

Result<TensorBoardWriter::File*> TensorBoardWriter::FileFor(Mode mode) {
  auto it = files_.find(mode);
  if (it != files_.end()) return it->second.get();
  const std::string folder = JoinPath(dir_, ModeName(mode));
  TS_RETURN_IF_ERROR(env_->CreateDirs(folder).WithContext("creating TensorBoard folder"));
  const uint64_t now_s = env_->NowMicros() / 1000000;
  const std::string name = "events.out.tfevents." + std::to_string(now_s) + "." +
                           HostNameForFile() + "." + std::to_string(::getpid()) + ".trainscope";
  auto f = std::make_unique<File>();
  f->path = JoinPath(folder, name);
  TS_ASSIGN_OR_RETURN(f->file, env_->NewWritableFile(f->path));
  std::string rec;
  record_io::AppendRecord(event_codec::EncodeFileVersionEvent(
                              static_cast<double>(env_->NowMicros()) * 1e-6, kFileVersion),
                          /*real_crc=*/true, &rec);
  TS_RETURN_IF_ERROR(f->file->Append(rec));
  File* raw = f.get();
  files_[mode] = std::move(f);
  return raw;
}

Status TensorBoardWriter::Append(Mode mode, std::string_view event_payload) {
  TS_ASSIGN_OR_RETURN(File * f, FileFor(mode));
  if (f->closed) return Status::Aborted("TensorBoard file " + f->path + " is closed");
  std::string rec;
  record_io::AppendRecord(event_payload, /*real_crc=*/true, &rec);
  return f->file->Append(rec);
}

Status TensorBoardWriter::AddScalar(Mode mode, std::string_view tag, int64_t step, double value,
                                    double wall_time_s) {
  if (wall_time_s == 0) wall_time_s = static_cast<double>(env_->NowMicros()) * 1e-6;
  return Append(mode, event_codec::EncodeScalarEvent(wall_time_s, step, CleanTensorBoardTag(tag),
                                                     static_cast<float>(value)));
}

Status TensorBoardWriter::AddHistogram(Mode mode, std::string_view tag, int64_t step,
                                       const Histogram& h, double wall_time_s) {
  if (h.edges.size() != h.counts.size() + 1 && !(h.edges.empty() && h.counts.empty())) {
    return Status::InvalidArgument("histogram for \"" + std::string(tag) + "\" has " +
                                   std::to_string(h.edges.size()) + " edges for " +
                                   std::to_string(h.counts.size()) + " bins (needs bins + 1)");
  }
  if (wall_time_s == 0) wall_time_s = static_cast<double>(env_->NowMicros()) * 1e-6;
  event_codec::HistogramData d;
  d.min = h.min;
  d.max = h.max;
  d.num = h.num;
  d.sum = h.sum;
  d.sum_squares = h.sum_squares;
  // TensorBoard stores right edges only: an empty first bucket ending at the left edge keeps
  // the histogram's lower bound (as smdebug and TensorFlow do).
  if (!h.edges.empty()) {
    d.bucket_limit = h.edges;
    d.bucket.reserve(h.counts.size() + 1);
    d.bucket.push_back(0);
    d.bucket.insert(d.bucket.end(), h.counts.begin(), h.counts.end());
  }
  return Append(mode,
                event_codec::EncodeHistogramEvent(wall_time_s, step, CleanTensorBoardTag(tag), d));
}

Status TensorBoardWriter::Flush() {
  Status first;
  for (auto& [mode, f] : files_) {
    if (f->closed) continue;
    Status s = f->file->Flush();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

Status TensorBoardWriter::Close() {
  Status first;
  for (auto& [mode, f] : files_) {
    if (f->closed) continue;
    f->closed = true;
    Status s = f->file->Close();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;  // files stay listed (FilePath) but closed: later appends fail
}

std::string TensorBoardWriter::FilePath(Mode mode) const {
  auto it = files_.find(mode);
  return it == files_.end() ? std::string() : it->second->path;
}

}  // namespace trainscope
