#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "profiler/reader_util.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/profiler_format.h"

namespace trainscope {
namespace pf = profiler_format;
using nlohmann::json;

namespace {

// JSON text of v; never throws (invalid UTF-8 is replaced).
std::string Dump(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// Times further than this from the epoch (about 126,000 years, in microseconds) are not read:
// sums and differences of two times, and a time plus its file's base, then stay within int64.
constexpr double kMaxAbsMicros = 4e18;

// Integer microseconds of a JSON number (Chrome allows fractions), or nullopt (also when out of
// range: a damaged or hostile file may hold any number).
std::optional<int64_t> Micros(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  double d = it->get<double>();
  if (!std::isfinite(d) || std::fabs(d) > kMaxAbsMicros) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  return std::llround(d);
}

// A JSON float as an integer, or nullopt when it is not finite or out of the int64 range.
std::optional<int64_t> IntOfDouble(double d) {
  if (!std::isfinite(d) || std::fabs(d) > 9e18) return std::nullopt;
  return static_cast<int64_t>(d);
}

int64_t IdOf(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number()) return IntOfDouble(it->get<double>()).value_or(0);
  if (it->is_string())
    return static_cast<int64_t>(std::hash<std::string>()(it->get<std::string>()) & 0x7fffffff);
  return 0;
}

std::optional<int64_t> ParseStep(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) return IntOfDouble(v.get<double>());
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.empty()) return std::nullopt;
    int64_t out = 0;
    size_t i = (s[0] == '-') ? 1 : 0;
    if (i == s.size() || s.size() - i > 18) return std::nullopt;  // 18 digits fit in int64
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      out = out * 10 + (s[i] - '0');
    }
    return s[0] == '-' ? -out : out;
  }
  return std::nullopt;
}

// Turns the raw records of one file into events (see TimelineReader::ParseFile).
class FileParser {
 public:
  FileParser(std::string_view node_id, std::string_view suffix)
      : node_id_(node_id), suffix_(suffix) {}

  void Add(const json& e) {
    if (!e.is_object()) return;
    auto ph_it = e.find("ph");
    if (ph_it == e.end() || !ph_it->is_string() ||
        ph_it->get_ref<const std::string&>().size() != 1) {
      return;
    }
    const char ph = ph_it->get_ref<const std::string&>()[0];
    const json* args = nullptr;
    if (auto it = e.find("args"); it != e.end() && it->is_object()) args = &*it;
    const int64_t pid = IdOf(e, "pid");
    const int64_t tid = IdOf(e, "tid");
    if (ph == 'M') {
      if (args == nullptr) return;
      if (auto base = Micros(*args, std::string(pf::kStartTimeArg).c_str())) base_us_ = *base;
      auto name = e.find("name");
      if (name != e.end() && name->is_string() && *name == "process_name") {
        auto n = args->find("name");
        if (n != args->end() && n->is_string()) phases_[pid] = n->get<std::string>();
      }
      return;
    }
    auto ts = Micros(e, "ts");
    if (!ts) return;
    if (ph == 'X' || ph == 'i' || ph == 'I') {
      TimelineEvent ev = Make(e, ph == 'X' ? 'X' : 'i', pid, tid, *ts, args);
      if (ph == 'X') ev.dur_us = std::max<int64_t>(0, Micros(e, "dur").value_or(0));
      if (auto s = e.find("s");
          ph != 'X' && s != e.end() && s->is_string() && (*s == "g" || *s == "p" || *s == "t")) {
        ev.scope = s->get_ref<const std::string&>()[0];
      }
      events_.push_back(std::move(ev));
    } else if (ph == 'B') {
      stacks_[{pid, tid}].push_back(e);
    } else if (ph == 'E') {
      auto it = stacks_.find({pid, tid});
      if (it == stacks_.end() || it->second.empty()) return;  // unmatched E: ignored
      json b = std::move(it->second.back());
      it->second.pop_back();
      const json* bargs = nullptr;
      if (auto a = b.find("args"); a != b.end() && a->is_object()) bargs = &*a;
      int64_t bts = Micros(b, "ts").value_or(*ts);
      TimelineEvent ev = Make(b, 'X', pid, tid, bts, args ? args : bargs);
      ev.dur_us = std::max<int64_t>(0, *ts - bts);
      events_.push_back(std::move(ev));
    }
  }

  std::vector<TimelineEvent> Finish() {
    for (TimelineEvent& ev : events_) {
      ev.start_us += base_us_;
      auto it = phases_.find(ev.pid);
      ev.phase = it == phases_.end() ? "Unknown" : it->second;
    }
    return std::move(events_);
  }

 private:
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
      return std::hash<int64_t>()(p.first * 1000003 + p.second);
    }
  };

  TimelineEvent Make(const json& e, char ph, int64_t pid, int64_t tid, int64_t ts,
                     const json* args) {
    TimelineEvent ev;
    if (auto n = e.find("name"); n != e.end() && n->is_string()) ev.name = n->get<std::string>();
    ev.ph = ph;
    ev.start_us = ts;  // base added in Finish (metadata may follow in a merged file)
    ev.pid = pid;
    ev.tid = tid;
    ev.node_id = std::string(node_id_);
    ev.file_suffix = std::string(suffix_);
    if (args) {
      if (!args->empty()) ev.args_json = Dump(*args);
      for (auto it = args->begin(); it != args->end(); ++it) {
        ev.args.emplace_back(it.key(), it->is_string() ? it->get<std::string>() : Dump(*it));
        if (it.key() == pf::kStepArg) ev.step = ParseStep(*it);
      }
    }
    return ev;
  }

  std::string_view node_id_, suffix_;
  int64_t base_us_ = 0;
  std::unordered_map<int64_t, std::string> phases_;
  std::unordered_map<std::pair<int64_t, int64_t>, std::vector<json>, PairHash> stacks_;
  std::vector<TimelineEvent> events_;
};

}  // namespace

const std::string* TimelineEvent::Arg(std::string_view key) const {
  for (const auto& [k, v] : args) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::vector<TimelineEvent> TimelineReader::ParseFile(std::string_view contents,
                                                     std::string_view node_id,
                                                     std::string_view suffix, std::string_view path,
                                                     ReaderStats* stats) {
  FileParser parser(node_id, suffix);
  json whole = json::parse(contents, nullptr, /*allow_exceptions=*/false);
  if (!whole.is_discarded() && (whole.is_array() || whole.is_object())) {
    const json* list = &whole;
    if (whole.is_object()) {
      auto it = whole.find("traceEvents");
      if (it == whole.end() || !it->is_array()) {
        ++stats->files_failed;
        reader_util::AddProblem(stats, std::string(path) + ": JSON object without traceEvents");
        return {};
      }
      list = &*it;
    }
    for (const json& e : *list) parser.Add(e);
    ++stats->files_parsed;
    return parser.Finish();
  }
  // Not one JSON value: a file written one event per line that lacks its "]" or ends in a torn
  // line (smdebug's writer, a crash). Parse line by line.
  int64_t good = 0;
  reader_util::ForEachLine(contents, [&](std::string_view line, int64_t n) {
    if (line.front() == '[') line.remove_prefix(1);
    while (!line.empty() && (line.back() == ',' || line.back() == ']' || line.back() == ' ')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty()) return;
    json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (e.is_discarded() || !e.is_object()) {
      ++stats->lines_skipped;
      reader_util::AddProblem(stats, std::string(path) + " line " + std::to_string(n) +
                                         ": not a trace event (skipped)");
      return;
    }
    ++good;
    parser.Add(e);
  });
  if (good == 0 && !contents.empty()) {
    ++stats->files_failed;
    reader_util::AddProblem(stats, std::string(path) + ": no trace event could be parsed");
    return {};
  }
  ++stats->files_parsed;
  return parser.Finish();
}

TimelineReader::TimelineReader(Env* env, std::string trial_dir, TimelineReaderOptions options)
    : env_(env ? env : Env::Default()), trial_dir_(std::move(trial_dir)), options_(options) {}

Status TimelineReader::Refresh() {
  std::vector<std::string> paths;
  reader_util::ListFilesRecursive(env_, JoinPath(trial_dir_, pf::kFrameworkEventsDir), 2, &paths);
  std::vector<TimelineFile> files;
  for (std::string& p : paths) {
    auto parsed = pf::ParseTimelineFileName(Basename(p));
    if (!parsed) continue;
    files.push_back(
        {parsed->end_us, std::move(parsed->node_id), std::move(parsed->suffix), std::move(p)});
  }
  std::sort(files.begin(), files.end(), [](const TimelineFile& a, const TimelineFile& b) {
    return a.end_us != b.end_us ? a.end_us < b.end_us : a.path < b.path;
  });
  files_ = std::move(files);
  listed_ = true;
  return Status::OK();
}

int64_t TimelineReader::FirstTimestampMicros() const {
  return files_.empty() ? 0 : files_.front().end_us;
}

int64_t TimelineReader::LatestTimestampMicros() const {
  return files_.empty() ? 0 : files_.back().end_us;
}

const std::vector<TimelineEvent>* TimelineReader::Load(const TimelineFile& f) {
  auto size = env_->GetFileSize(f.path);
  if (!size.ok()) {
    ++stats_.files_failed;
    reader_util::AddProblem(&stats_, size.status().ToString());
    return nullptr;
  }
  Cached& c = cache_[f.path];
  if (c.size == *size && (*size == 0 || !c.events.empty())) return &c.events;
  auto contents = env_->ReadFile(f.path, profiler_format::kMaxReadFileBytes);
  if (!contents.ok()) {
    ++stats_.files_failed;
    reader_util::AddProblem(&stats_, contents.status().ToString());
    return nullptr;
  }
  c.events = ParseFile(*contents, f.node_id, f.suffix, f.path, &stats_);
  c.size = contents->size();
  return &c.events;
}

namespace {

bool Matches(const TimelineFile& f, const TimelineQuery& q) {
  if (!q.node_id.empty() && f.node_id != q.node_id) return false;
  if (q.suffixes.empty()) return true;
  return std::find(q.suffixes.begin(), q.suffixes.end(), f.suffix) != q.suffixes.end();
}

bool Overlaps(const TimelineEvent& e, int64_t start_us, int64_t end_us) {
  if (e.start_us >= end_us) return false;
  return e.end_us() > start_us || e.start_us >= start_us;
}

}  // namespace

Result<std::vector<TimelineEvent>> TimelineReader::GetEvents(int64_t start_us, int64_t end_us,
                                                             const TimelineQuery& q) {
  if (!listed_) TS_RETURN_IF_ERROR(Refresh());
  std::vector<TimelineEvent> out;
  if (end_us <= start_us) return out;
  // A file holds events ending at or before its name's time, so files ending before start_us
  // could be skipped; but smdebug names a file rotated for size by the time of the rotation check,
  // which can be earlier than its events, hence the buffer on both sides (as smdebug's reader).
  const int64_t buf = options_.file_buffer_us;
  const int64_t lo = start_us > kTimeMin + buf ? start_us - buf : kTimeMin;
  const int64_t hi = end_us < kTimeMax - buf ? end_us + buf : kTimeMax;
  for (const TimelineFile& f : files_) {
    if (f.end_us < lo || f.end_us > hi || !Matches(f, q)) continue;
    const std::vector<TimelineEvent>* events = Load(f);
    if (events == nullptr) continue;
    for (const TimelineEvent& e : *events) {
      if (!Overlaps(e, start_us, end_us)) continue;
      if (!q.phase_prefix.empty() &&
          e.phase.compare(0, q.phase_prefix.size(), q.phase_prefix) != 0) {
        continue;
      }
      out.push_back(e);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
    return a.start_us < b.start_us;
  });
  return out;
}

Result<StepTimeRange> TimelineReader::GetStepTimeRange(int64_t start_step, int64_t end_step) {
  if (end_step <= start_step) {
    return Status::InvalidArgument("step range [" + std::to_string(start_step) + ", " +
                                   std::to_string(end_step) + ") is empty");
  }
  if (!listed_) TS_RETURN_IF_ERROR(Refresh());
  std::optional<int64_t> start, end, last_end_inside;
  for (const TimelineFile& f : files_) {
    if (f.suffix != pf::kPythonTimelineSuffix) continue;
    const std::vector<TimelineEvent>* events = Load(f);
    if (events == nullptr) continue;
    for (const TimelineEvent& e : *events) {
      if (!e.step) continue;
      if (*e.step == start_step && (!start || e.start_us < *start)) start = e.start_us;
      if (*e.step == end_step && (!end || e.start_us < *end)) end = e.start_us;
      if (*e.step >= start_step && *e.step < end_step &&
          (!last_end_inside || e.end_us() > *last_end_inside)) {
        last_end_inside = e.end_us();
      }
    }
  }
  if (!start) {
    return Status::NotFound("no framework event with step_num " + std::to_string(start_step) +
                            " in " + JoinPath(trial_dir_, pf::kFrameworkEventsDir) +
                            " (is the step done and its timeline file rotated?)");
  }
  // Step end_step not (yet) seen: the range ends just after the last event of the steps inside.
  int64_t stop = end ? *end : *last_end_inside + 1;
  if (stop <= *start) stop = *start + 1;
  return StepTimeRange{*start, stop};
}

Result<std::vector<TimelineEvent>> TimelineReader::GetEventsByStep(int64_t start_step,
                                                                   int64_t end_step,
                                                                   const TimelineQuery& q) {
  TS_ASSIGN_OR_RETURN(StepTimeRange r, GetStepTimeRange(start_step, end_step));
  return GetEvents(r.start_us, r.end_us, q);
}

}  // namespace trainscope
