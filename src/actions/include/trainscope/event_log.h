// EventLog: the trial's structured record of what rules found and what actions did, as JSON lines
// appended to <trial>/rule-output/events.log.jsonl (docs/formats/event_log.md). One line per
// finding, status change or action outcome; each line is handed to the OS as it is logged (one
// write(2) on an O_APPEND file), so a crash loses nothing already logged and several processes
// (one per rule) may append to the same file without interleaving lines.
//
// Thread safety: an EventLog may be used from any thread. ReadEvents is a free function.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/action.h"
#include "trainscope/env.h"
#include "trainscope/finding.h"
#include "trainscope/status.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

class EventLog {
 public:
  // Opens (creating rule-output/ and the file if needed) <trial>/rule-output/events.log.jsonl.
  // `env` is not owned and must outlive the log; null means Env::Default().
  static Result<std::unique_ptr<EventLog>> Open(Env* env, const std::string& trial_dir);
  // The same for an explicit file path.
  static Result<std::unique_ptr<EventLog>> OpenFile(Env* env, const std::string& path);
  static std::string PathFor(const std::string& trial_dir);

  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Logs a finding ("event": "finding") or a status change ("event": "status"). A finding whose
  // time_micros is 0 is stamped with the Env's clock.
  Status LogFinding(const RuleFinding& finding);
  // Logs an action outcome ("event": "action").
  Status LogAction(const ActionOutcome& outcome);

  const std::string& path() const { return path_; }
  // Lines written by this object.
  uint64_t lines_written() const;

 private:
  EventLog(Env* env, std::string path, std::unique_ptr<WritableFile> file);
  Status AppendLine(std::string line);

  Env* const env_;
  const std::string path_;
  mutable Mutex mu_;
  std::unique_ptr<WritableFile> file_ TS_GUARDED_BY(mu_);
  uint64_t lines_ TS_GUARDED_BY(mu_) = 0;
};

// One parsed line of the event log.
struct LoggedEvent {
  std::string event;  // "finding", "status", "action" (or a newer kind)
  int64_t time_micros = 0;
  std::optional<RuleFinding> finding;   // for "finding" and "status"
  std::optional<ActionOutcome> action;  // for "action"
};

// Reads the complete lines of the log at `path` from byte `*offset`, appends them to *out and
// advances *offset past them; a last line without its newline (still being written) is left for
// the next call. Reads at most 16 MiB per call (call again while *offset advances). Lines of
// unknown kinds are returned with only `event` and `time_micros` set. NotFound when there is no
// log yet; Corruption naming the byte offset for a line that is not a JSON event.
Status ReadEvents(Env* env, const std::string& path, uint64_t* offset,
                  std::vector<LoggedEvent>* out);

}  // namespace trainscope
