#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "profiler/json_write.h"
#include "trainscope/timeline.h"

namespace trainscope {
namespace pf = profiler_format;

namespace {

constexpr uint64_t kMicrosPerHour = 3600ull * 1000000ull;

int64_t CurrentTid() {
  static thread_local int64_t tid = static_cast<int64_t>(::syscall(SYS_gettid));
  return tid;
}

void ReportToStderr(std::string_view msg) {
  std::fprintf(stderr, "trainscope: %.*s\n", static_cast<int>(msg.size()), msg.data());
}

void AppendArgs(std::string* out, const TimelineArgs& args) {
  out->append(",\"args\":{");
  bool first = true;
  for (const TimelineArg& a : args) {
    if (!first) out->push_back(',');
    first = false;
    json_write::String(out, a.key);
    out->push_back(':');
    std::visit(
        [out](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            out->append(v ? "true" : "false");
          } else if constexpr (std::is_same_v<T, int64_t>) {
            json_write::Int(out, v);
          } else if constexpr (std::is_same_v<T, double>) {
            if (std::isfinite(v)) {
              json_write::Double(out, v);
            } else {
              out->append("null");
            }
          } else {
            json_write::String(out, v);
          }
        },
        a.value);
  }
  out->push_back('}');
}

}  // namespace

struct TimelineWriter::Pending {
  char ph;
  char scope;
  std::string phase;
  std::string name;
  uint64_t ts_us;
  uint64_t dur_us;
  int64_t tid;
  TimelineArgs args;
};

// The file being written and the writer-wide state the flushing side owns. Guarded by file_mu_
// (TimelineWriter::file_ is TS_PT_GUARDED_BY it, so the analysis checks each use).
class TimelineWriter::FileState {
 public:
  std::unique_ptr<WritableFile> file;
  std::string tmp_path;
  uint64_t hour = 0;          // UTC hour (end_us / 1h) of the file's first event
  uint64_t opened_at_us = 0;  // clock when opened
  uint64_t max_end_us = 0;
  int64_t events_in_file = 0;
  std::set<int64_t> phases_in_file;  // pids whose metadata this file already holds
  std::map<std::string, int64_t, std::less<>> phase_pids;  // writer-wide, from 1
  std::vector<std::string> finished;
  std::set<std::string> reported;
  Status first_error;
  int64_t consecutive_open_failures = 0;
  std::string line;  // reused
};

Result<std::unique_ptr<TimelineWriter>> TimelineWriter::Create(Env* env, std::string base_dir,
                                                               TimelineWriterOptions options) {
  if (options.node_id.empty()) options.node_id = pf::DefaultTimelineNodeId();
  if (options.node_id.find('_') != std::string::npos ||
      options.node_id.find('/') != std::string::npos) {
    return Status::InvalidArgument("timeline node_id \"" + options.node_id +
                                   "\" must not contain '_' or '/' (they delimit the file name)");
  }
  if (options.suffix.empty() || options.suffix.find('/') != std::string::npos ||
      options.suffix.size() < 5 || options.suffix.substr(options.suffix.size() - 5) != ".json") {
    return Status::InvalidArgument("timeline suffix \"" + options.suffix +
                                   "\" must be a file name ending in .json");
  }
  if (options.close_interval_seconds <= 0) {
    return Status::InvalidArgument("RotateFileCloseIntervalInSeconds must be > 0, got " +
                                   std::to_string(options.close_interval_seconds));
  }
  if (env == nullptr) env = Env::Default();
  return std::unique_ptr<TimelineWriter>(
      new TimelineWriter(env, std::move(base_dir), std::move(options)));
}

TimelineWriter::TimelineWriter(Env* env, std::string base_dir, TimelineWriterOptions options)
    : options_(std::move(options)),
      env_(env),
      base_dir_(std::move(base_dir)),
      file_(std::make_unique<FileState>()) {
  if (!options_.clock) options_.clock = [env] { return env->NowMicros(); };
  if (!options_.report) options_.report = ReportToStderr;
  if (options_.start_time_us == 0) options_.start_time_us = options_.clock();
  if (options_.flush_interval_millis > 0) thread_ = std::thread([this] { Run(); });
}

// A destructor cannot report: owners who want the error call Close() first (idempotent). Close
// reports its I/O errors itself; an exception (out of memory) must not end the training from a
// destructor: the timeline is lost, the training goes on.
TimelineWriter::~TimelineWriter() {
  try {
    (void)Close();
  } catch (...) {
  }
}

void TimelineWriter::Run() {
  UniqueMutexLock lock(&run_mu_);
  while (!stop_) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(options_.flush_interval_millis);
    while (!stop_ && cv_.WaitUntil(&run_mu_, deadline)) {
    }
    if (stop_) break;
    lock.Unlock();
    (void)Flush();  // Flush reports its error itself; the training is not to be disturbed
    lock.Lock();
  }
}

void TimelineWriter::Enqueue(char ph, std::string_view phase, std::string_view name, uint64_t ts_us,
                             uint64_t dur_us, TimelineArgs args, char scope) {
  if (!healthy_.load(std::memory_order_relaxed)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  int64_t tid = CurrentTid();
  MutexLock lock(&buf_mu_);
  if (closed_ || buffer_.size() + steps_.size() >= options_.max_buffered_events) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  buffer_.push_back(Pending{ph, scope, std::string(phase), std::string(name), ts_us, dur_us, tid,
                            std::move(args)});
  recorded_.fetch_add(1, std::memory_order_relaxed);
}

void TimelineWriter::Record(std::string_view phase, std::string_view name, uint64_t start_us,
                            uint64_t dur_us, TimelineArgs args) {
  Enqueue('X', phase, name, start_us, dur_us, std::move(args), 0);
}

void TimelineWriter::RecordInstant(std::string_view phase, std::string_view name, uint64_t ts_us,
                                   TimelineArgs args, char scope) {
  if (scope != 'g' && scope != 'p' && scope != 't') scope = 't';
  Enqueue('i', phase, name, ts_us, 0, std::move(args), scope);
}

Status TimelineWriter::Flush() { return FlushImpl(/*finish_file=*/false); }

Status TimelineWriter::Close() {
  {
    MutexLock lock(&buf_mu_);
    if (closed_) return Status::OK();
    closed_ = true;
  }
  {
    MutexLock lock(&run_mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  return FlushImpl(/*finish_file=*/true);
}

std::vector<std::string> TimelineWriter::finished_files() const {
  MutexLock lock(&file_mu_);
  return file_->finished;
}

void TimelineWriter::RecordSteps(std::span<const TimelineStepSpan> spans) {
  if (spans.empty()) return;
  const auto n = static_cast<int64_t>(spans.size());
  if (!healthy_.load(std::memory_order_relaxed)) {
    dropped_.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  const int64_t tid = CurrentTid();
  MutexLock lock(&buf_mu_);
  const size_t held = buffer_.size() + steps_.size();
  const size_t room =
      closed_ || held >= options_.max_buffered_events ? 0 : options_.max_buffered_events - held;
  const size_t kept = std::min(room, spans.size());
  for (size_t i = 0; i < kept; ++i) steps_.push_back(PendingStep{spans[i], tid});
  recorded_.fetch_add(static_cast<int64_t>(kept), std::memory_order_relaxed);
  dropped_.fetch_add(n - static_cast<int64_t>(kept), std::memory_order_relaxed);
}

Status TimelineWriter::FlushImpl(bool finish_file) {
  std::vector<Pending> batch;
  MutexLock lock(&file_mu_);  // before buf_mu_: steps_flushing_ is the flush's
  {
    MutexLock buf_lock(&buf_mu_);
    batch.swap(buffer_);
    steps_flushing_.swap(steps_);  // steps_ keeps the capacity of the last flush's
  }
  // RecordSteps' spans become events here, on the flushing thread.
  batch.reserve(batch.size() + steps_flushing_.size());
  for (const PendingStep& p : steps_flushing_) {
    const TimelineStepSpan& s = p.span;
    TimelineArgs args;
    args.reserve(6);
    if (s.step >= 0) args.emplace_back(std::string(pf::kStepArg), std::to_string(s.step));
    args.emplace_back("pid", s.pid);
    args.emplace_back("global_step", s.global_step);
    if (!s.phases) args.emplace_back("phases", false);
    if (s.saved) args.emplace_back("saved", true);
    if (s.model_calls >= 2) args.emplace_back("model_calls", s.model_calls);
    batch.push_back(Pending{'X', 0, std::string(s.phase), std::string(s.phase), s.start_us,
                            s.dur_us, p.tid, std::move(args)});
  }
  steps_flushing_.clear();
  FileState& f = *file_;
  auto report_once = [&](const std::string& key, const Status& s) {
    if (f.first_error.ok()) f.first_error = s;
    if (f.reported.insert(key).second) options_.report("framework timeline: " + s.ToString());
  };
  auto finish = [&]() {
    Status s = [&]() -> Status {
      TS_RETURN_IF_ERROR(f.file->Append("\n]\n"));
      TS_RETURN_IF_ERROR(f.file->Close());
      f.file.reset();
      uint64_t end = f.max_end_us;
      std::string rel =
          pf::TimelineFilePath(static_cast<int64_t>(end), options_.node_id, options_.suffix);
      std::string path = JoinPath(base_dir_, rel);
      while (env_->FileExists(path)) {  // two files ending in the same microsecond
        ++end;
        rel = pf::TimelineFilePath(static_cast<int64_t>(end), options_.node_id, options_.suffix);
        path = JoinPath(base_dir_, rel);
      }
      TS_RETURN_IF_ERROR(env_->CreateDirs(std::string(Dirname(path))));
      TS_RETURN_IF_ERROR(env_->RenameFile(f.tmp_path, path));
      f.finished.push_back(rel);
      return Status::OK();
    }();
    if (!s.ok()) {
      if (f.file) (void)f.file->Close();  // dropped: `s` says why
      f.file.reset();
      (void)env_->RemoveFile(f.tmp_path);  // cleanup, as above
      dropped_.fetch_add(f.events_in_file);
      written_.fetch_sub(f.events_in_file);
      report_once("finish", s.WithContext("closing timeline file " + f.tmp_path +
                                          " (its events are dropped; reported once)"));
    }
  };
  auto open = [&](uint64_t hour) -> bool {
    f.tmp_path = JoinPath(base_dir_, std::string(pf::kFrameworkDir) + "/" + options_.node_id + "_" +
                                         options_.suffix + std::string(pf::kTmpSuffix));
    Status s = env_->CreateDirs(std::string(Dirname(f.tmp_path)));
    if (s.ok()) {
      auto file = env_->NewWritableFile(f.tmp_path);
      if (file.ok()) {
        f.file = std::move(file).value();
      } else {
        s = file.status();
      }
    }
    if (s.ok()) {
      f.line.assign(
          "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"ts\":0,"
          "\"args\":{\"name\":\"trainscope\",\"");
      f.line.append(pf::kStartTimeArg).append("\":");
      json_write::UInt(&f.line, options_.start_time_us);
      f.line.append(
          "}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
          "\"ts\":0,\"args\":{\"sort_index\":0}}");
      s = f.file->Append(f.line);
    }
    if (!s.ok()) {
      if (f.file) (void)f.file->Close();  // dropped: `s` says why
      f.file.reset();
      ++f.consecutive_open_failures;
      report_once("open", s.WithContext("opening timeline file " + f.tmp_path));
      if (f.consecutive_open_failures >= options_.file_open_fail_threshold) {
        healthy_.store(false);
        options_.report("framework timeline: " + std::to_string(f.consecutive_open_failures) +
                        " consecutive failures to open a file: recording stops, events are "
                        "dropped");
      }
      return false;
    }
    f.consecutive_open_failures = 0;
    f.hour = hour;
    f.opened_at_us = options_.clock();
    f.max_end_us = 0;
    f.events_in_file = 0;
    f.phases_in_file.clear();
    return true;
  };

  const uint64_t interval_us = static_cast<uint64_t>(options_.close_interval_seconds * 1e6);
  auto too_old = [&](uint64_t now) {
    return now > f.opened_at_us && now - f.opened_at_us > interval_us;
  };
  if (f.file && too_old(options_.clock())) finish();

  for (size_t i = 0; i < batch.size(); ++i) {
    Pending& p = batch[i];
    const uint64_t end = p.ts_us + p.dur_us;
    const uint64_t hour = end / kMicrosPerHour;
    if (f.file && (f.file->Size() > options_.max_file_size_bytes || hour != f.hour ||
                   too_old(options_.clock()))) {
      finish();
    }
    if (!f.file && !open(hour)) {
      dropped_.fetch_add(static_cast<int64_t>(batch.size() - i));
      break;
    }
    auto [it, added] = f.phase_pids.try_emplace(p.phase, 0);
    if (added) it->second = static_cast<int64_t>(f.phase_pids.size());
    const int64_t pid = it->second;
    std::string& l = f.line;
    l.clear();
    if (f.phases_in_file.insert(pid).second) {
      l.append(",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
      json_write::Int(&l, pid);
      l.append(",\"tid\":0,\"ts\":0,\"args\":{\"name\":");
      json_write::String(&l, p.phase);
      l.append("}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":");
      json_write::Int(&l, pid);
      l.append(",\"tid\":0,\"ts\":0,\"args\":{\"sort_index\":");
      json_write::Int(&l, pid);
      l.append("}}");
    }
    l.append(",\n{\"name\":");
    json_write::String(&l, p.name);
    l.append(",\"pid\":");
    json_write::Int(&l, pid);
    l.append(",\"tid\":");
    json_write::Int(&l, p.tid);
    l.append(",\"ph\":\"");
    l.push_back(p.ph);
    l.append("\",\"ts\":");
    json_write::Int(&l,
                    static_cast<int64_t>(p.ts_us) - static_cast<int64_t>(options_.start_time_us));
    if (p.ph == 'X') {
      l.append(",\"dur\":");
      json_write::UInt(&l, p.dur_us);
    } else {
      l.append(",\"s\":\"");
      l.push_back(p.scope);
      l.push_back('"');
    }
    if (!p.args.empty()) AppendArgs(&l, p.args);
    l.push_back('}');
    Status s = f.file->Append(l);
    if (!s.ok()) {
      // The file is unusable: drop it (and what it held), start afresh with the next event.
      (void)f.file->Close();  // unusable already: `s` says why
      f.file.reset();
      (void)env_->RemoveFile(f.tmp_path);  // cleanup, as above
      dropped_.fetch_add(f.events_in_file + 1);
      written_.fetch_sub(f.events_in_file);
      report_once("append", s.WithContext("writing timeline file " + f.tmp_path +
                                          " (its events are dropped; reported once)"));
      continue;
    }
    ++f.events_in_file;
    written_.fetch_add(1);
    if (end > f.max_end_us) f.max_end_us = end;
  }
  if (f.file && finish_file) {
    finish();
  } else if (f.file) {
    Status s = f.file->Flush();
    if (!s.ok()) report_once("flush", s.WithContext("flushing timeline file " + f.tmp_path));
  }
  Status out = f.first_error;
  f.first_error = Status::OK();
  return out;
}

ScopedSpan::ScopedSpan(TimelineWriter* writer, std::string phase, std::string name,
                       TimelineArgs args)
    : writer_(writer), phase_(std::move(phase)), name_(std::move(name)), args_(std::move(args)) {
  if (writer_) start_us_ = writer_->NowMicros();
}

ScopedSpan::~ScopedSpan() {
  if (writer_ == nullptr) return;
  uint64_t end = writer_->NowMicros();
  writer_->Record(phase_, name_, start_us_, end > start_us_ ? end - start_us_ : 0,
                  std::move(args_));
}

}  // namespace trainscope
