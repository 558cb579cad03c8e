// MergeTimeline: system counters, framework spans, torch.profiler traces and rule findings in one
// Chrome trace (docs/formats/timeline.md, "Merged trace").
#include "trainscope/trace_merge.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "profiler/reader_util.h"
#include "trainscope/finding.h"
#include "trainscope/profiler_format.h"
#include "trainscope/rule_output_format.h"

namespace trainscope {
namespace pf = profiler_format;
using nlohmann::json;

namespace {

constexpr int64_t kRulesPid = 1;
constexpr int64_t kFirstSystemPid = 100;
constexpr int64_t kFirstFrameworkPid = 10000;
constexpr int64_t kFirstTorchPid = 1000000;
constexpr int64_t kFirstStringTid = 1000000000;

std::string Dump(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// Epoch microseconds from the inputs may be any number (a damaged or hostile file): sums and
// conversions saturate at the int64 range instead of overflowing (undefined behaviour).
int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kTimeMax : kTimeMin;
  return r;
}
int64_t SatMicros(double v) {
  if (!(v == v)) return 0;  // NaN
  if (v >= 9.2e18) return kTimeMax;
  if (v <= -9.2e18) return kTimeMin;
  return static_cast<int64_t>(v);
}

// e[key] if it is a string, else "" (json::value() would throw on a type mismatch).
std::string Str(const json& e, const char* key) {
  if (!e.is_object()) return "";
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A torch.profiler Chrome trace placed on the epoch clock.
// NOLINTNEXTLINE(bugprone-exception-escape): a false alarm on the implicit move of `doc`.
struct TorchTrace {
  std::string path;
  json doc;              // the whole file
  int64_t base_us = 0;   // epoch microseconds of its ts 0 (whole part)
  double base_frac = 0;  // sub-microsecond part
};

// A rule's finding on the timeline: a line of its events.jsonl (docs/formats/rule_output.md),
// read with the findings' one codec (RuleFindingFromEventsLine, finding.h).
struct TimelineFinding {
  std::string rule;     // the rule's folder
  int64_t time_us;      // the finding's time_us (epoch microseconds)
  std::string message;  // its explanation; without one, its status
  json record;          // the line as written: the event's args
};

class Merger {
 public:
  Merger(Env* env, std::string trial, const MergeTimelineOptions& o, MergeTimelineResult* r)
      : env_(env), trial_(std::move(trial)), opt_(o), res_(r) {}

  void Gather() {
    if (opt_.include_system) GatherSystem();
    if (opt_.include_framework) GatherFramework();
    if (opt_.include_detailed) GatherTorch();
    if (opt_.include_rules) GatherRules();
  }

  std::string Emit() {
    res_->base_time_us = base_ == kTimeMax ? 0 : base_;
    EmitRules();
    EmitSystem();
    EmitFramework();
    EmitTorch();
    json other = {{"trial", trial_},
                  {std::string(pf::kStartTimeArg), res_->base_time_us},
                  {"generator", "trainscope MergeTimeline"}};
    std::string head = "{\"otherData\":" + Dump(other) + ",\n\"traceEvents\":[\n";
    return head + body_ + "\n]}\n";
  }

 private:
  void See(int64_t abs_us) { base_ = std::min(base_, abs_us); }
  bool InRange(int64_t start, int64_t end) const {
    return start < opt_.end_us && (end > opt_.start_us || start >= opt_.start_us);
  }
  double Rel(int64_t abs_us) const {
    return static_cast<double>(abs_us) - static_cast<double>(res_->base_time_us);
  }
  void Add(const json& e) {
    if (!body_.empty()) body_.append(",\n");
    body_.append(Dump(e));
  }
  void Metadata(int64_t pid, const std::string& name, int64_t sort_index) {
    Add({{"name", "process_name"},
         {"ph", "M"},
         {"pid", pid},
         {"tid", 0},
         {"ts", 0},
         {"args", {{"name", name}}}});
    Add({{"name", "process_sort_index"},
         {"ph", "M"},
         {"pid", pid},
         {"tid", 0},
         {"ts", 0},
         {"args", {{"sort_index", sort_index}}}});
    res_->metadata_events += 2;
  }
  void Warn(std::string w) { res_->warnings.push_back(std::move(w)); }
  void WarnStats(const ReaderStats& s) {
    for (const std::string& p : s.problems) Warn(p);
  }

  void GatherSystem() {
    SystemMetricsReader reader(env_, trial_);
    auto events = reader.GetEvents(opt_.start_us, opt_.end_us);
    if (!events.ok()) {
      Warn("system metrics: " + events.status().ToString());
      return;
    }
    system_ = std::move(events).value();
    for (const auto& e : system_) See(e.timestamp_us);
    WarnStats(reader.stats());
  }

  void GatherFramework() {
    TimelineReader reader(env_, trial_);
    auto events = reader.GetEvents(opt_.start_us, opt_.end_us);
    if (!events.ok()) {
      Warn("framework timeline: " + events.status().ToString());
      return;
    }
    framework_ = std::move(events).value();
    for (const auto& e : framework_) See(e.start_us);
    WarnStats(reader.stats());
  }

  void GatherTorch() {
    std::vector<std::string> paths;
    reader_util::ListFilesRecursive(env_, JoinPath(trial_, pf::kPytorchDetailedProfilingDir), 8,
                                    &paths);
    std::sort(paths.begin(), paths.end());
    for (const std::string& path : paths) {
      if (path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
        Warn(path + ": compressed traces are not read; decompress it to include it");
        continue;
      }
      if (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0) continue;
      auto text = env_->ReadFile(path, pf::kMaxReadFileBytes);
      if (!text.ok()) {
        Warn(text.status().ToString());
        continue;
      }
      TorchTrace t;
      t.path = path;
      t.doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
      const json* events = nullptr;
      if (!t.doc.is_discarded() && t.doc.is_object()) {
        if (auto it = t.doc.find("traceEvents"); it != t.doc.end() && it->is_array()) {
          events = &*it;
        }
      } else if (!t.doc.is_discarded() && t.doc.is_array()) {
        events = &t.doc;
      }
      if (events == nullptr) {
        Warn(path + ": not a Chrome trace (no traceEvents array); skipped");
        continue;
      }
      bool has_base = false;
      if (t.doc.is_object()) {
        if (auto b = t.doc.find("baseTimeNanoseconds");
            b != t.doc.end() && b->is_number_integer()) {
          int64_t ns = b->get<int64_t>();
          t.base_us = ns / 1000;
          t.base_frac = static_cast<double>(ns % 1000) / 1000.0;
          has_base = true;
        }
      }
      if (!has_base) {
        // Without baseTimeNanoseconds, only traces whose ts are already epoch microseconds can be
        // placed (older torch); anything after 1973 in microseconds is taken as such.
        bool epoch = false;
        for (const json& e : *events) {
          if (e.is_object() && Str(e, "ph") != "M" && e.contains("ts") && e["ts"].is_number()) {
            epoch = e["ts"].get<double>() > 1e14;
            break;
          }
        }
        if (!epoch) {
          Warn(path +
               ": no baseTimeNanoseconds and ts not epoch microseconds: cannot place it "
               "on the trial's clock; skipped");
          continue;
        }
      }
      for (const json& e : *events) {
        if (!e.is_object() || Str(e, "ph") == "M") continue;
        auto ts = e.find("ts");
        if (ts == e.end() || !ts->is_number()) continue;
        int64_t abs = SatAdd(t.base_us, SatMicros(std::floor(ts->get<double>() + t.base_frac)));
        int64_t dur = 0;
        if (auto d = e.find("dur"); d != e.end() && d->is_number()) {
          dur = SatMicros(std::max(0.0, d->get<double>()));
        }
        if (InRange(abs, SatAdd(abs, dur))) See(abs);
      }
      torch_.push_back(std::move(t));
    }
  }

  void GatherRules() {
    const std::string root = JoinPath(trial_, rule_output_format::kRuleOutputDir);
    auto rules = env_->GetChildren(root);
    if (!rules.ok()) return;  // no rules ran
    std::sort(rules->begin(), rules->end());
    for (const std::string& rule : *rules) {
      const std::string path = JoinPath(JoinPath(root, rule), rule_output_format::kEventsFile);
      if (!env_->FileExists(path)) continue;
      auto text = env_->ReadFile(path, pf::kMaxReadFileBytes);
      if (!text.ok()) {
        Warn(text.status().ToString());
        continue;
      }
      int64_t skipped = 0;
      reader_util::ForEachLine(*text, [&](std::string_view line, int64_t) {
        Result<RuleFinding> f = RuleFindingFromEventsLine(line, rule);
        if (!f.ok() || f->time_micros == 0) {
          ++skipped;
          return;
        }
        const int64_t t = f->time_micros;
        if (!InRange(t, t)) return;
        See(t);
        std::string message = !f->explanation.empty()
                                  ? std::move(f->explanation)
                                  : std::string(RuleEvaluationStatusName(f->status));
        findings_.push_back(
            {rule, t, std::move(message), json::parse(line, nullptr, /*allow_exceptions=*/false)});
      });
      if (skipped > 0) {
        Warn(path + ": " + std::to_string(skipped) +
             " line(s) that are not a finding with a time_us; skipped");
      }
    }
  }

  // Each finding twice: a global instant (a line across the whole timeline, at the moment the
  // rule fired) and a zero-length slice on the "rules" process, one thread per rule, so the
  // rules' row lists what fired.
  void EmitRules() {
    if (findings_.empty()) return;
    Metadata(kRulesPid, "rules", kRulesPid);
    std::map<std::string, int64_t> tid_of;
    for (const TimelineFinding& f : findings_) {
      auto [it, added] = tid_of.try_emplace(f.rule, static_cast<int64_t>(tid_of.size()) + 1);
      if (added) {
        Add({{"name", "thread_name"},
             {"ph", "M"},
             {"ts", 0},
             {"pid", kRulesPid},
             {"tid", it->second},
             {"args", {{"name", f.rule}}}});
        ++res_->metadata_events;
      }
      const std::string name = f.rule + ": " + f.message;
      Add({{"name", name},
           {"cat", "rule"},
           {"ph", "i"},
           {"s", "g"},
           {"ts", Rel(f.time_us)},
           {"pid", kRulesPid},
           {"tid", 0},
           {"args", f.record}});
      Add({{"name", name},
           {"cat", "rule"},
           {"ph", "X"},
           {"ts", Rel(f.time_us)},
           {"dur", 0},
           {"pid", kRulesPid},
           {"tid", it->second},
           {"args", f.record}});
      ++res_->rule_events;
    }
  }

  void EmitSystem() {
    std::map<std::string, int64_t> node_pid;
    for (const SystemMetricEvent& e : system_) {
      auto [it, added] = node_pid.try_emplace(e.node_id, 0);
      if (added) {
        it->second = kFirstSystemPid + static_cast<int64_t>(node_pid.size()) - 1;
        Metadata(it->second, "system " + (e.node_id.empty() ? std::string("?") : e.node_id),
                 it->second);
      }
      std::string name = e.dimension;
      if (!e.name.empty() && e.name != e.dimension) name += " " + e.name;
      Add({{"name", name},
           {"cat", "system"},
           {"ph", "C"},
           {"ts", Rel(e.timestamp_us)},
           {"pid", it->second},
           {"tid", 0},
           {"args", {{"value", e.value}}}});
      ++res_->counter_events;
    }
  }

  void EmitFramework() {
    std::map<std::pair<std::string, std::string>, int64_t> pids;
    for (const TimelineEvent& e : framework_) {
      auto [it, added] = pids.try_emplace({e.node_id, e.phase}, 0);
      if (added) {
        it->second = kFirstFrameworkPid + static_cast<int64_t>(pids.size()) - 1;
        Metadata(it->second, e.phase + " (" + e.node_id + ")", it->second);
      }
      json ev = {{"name", e.name},        {"cat", "framework"}, {"ph", std::string(1, e.ph)},
                 {"ts", Rel(e.start_us)}, {"pid", it->second},  {"tid", e.tid}};
      if (e.ph == 'X') {
        ev["dur"] = e.dur_us;
      } else {
        ev["s"] = std::string(1, e.scope);
      }
      if (!e.args_json.empty()) {
        json args = json::parse(e.args_json, nullptr, false);
        if (args.is_object()) ev["args"] = std::move(args);
      }
      Add(ev);
      ++res_->framework_events;
    }
  }

  void EmitTorch() {
    int64_t next_pid = kFirstTorchPid;
    for (size_t fi = 0; fi < torch_.size(); ++fi) {
      TorchTrace& t = torch_[fi];
      json& events = t.doc.is_array() ? t.doc : t.doc["traceEvents"];
      const std::string label = "torch " + std::string(Basename(t.path));
      std::map<std::string, int64_t> pid_of;                          // original pid -> ours
      std::map<std::pair<int64_t, std::string>, int64_t> string_tid;  // (our pid, tid) -> int
      std::map<int64_t, std::string> names;                           // our pid -> process name
      auto map_pid = [&](const json& e) {
        std::string key = e.contains("pid") ? Dump(e["pid"]) : "null";
        auto [it, added] = pid_of.try_emplace(key, 0);
        if (added) {
          it->second = next_pid++;
          names[it->second] =
              label + ": " +
              (e.contains("pid") && e["pid"].is_string() ? e["pid"].get<std::string>()
                                                         : "pid " + key);
        }
        return it->second;
      };
      auto map_tid = [&](int64_t pid, const json& e) -> int64_t {
        auto it = e.find("tid");
        if (it != e.end() && it->is_number_integer()) return it->get<int64_t>();
        std::string key = it == e.end() ? "null" : Dump(*it);
        auto [m, added] = string_tid.try_emplace({pid, key}, 0);
        if (added) m->second = kFirstStringTid + static_cast<int64_t>(string_tid.size());
        return m->second;
      };
      // First pass: events (and the process names their metadata gives).
      std::vector<json> meta;
      for (json& e : events) {
        if (!e.is_object()) continue;
        const std::string ph = Str(e, "ph");
        if (ph == "M") {
          meta.push_back(e);
          continue;
        }
        auto ts = e.find("ts");
        // B/E are left out: a time range could keep one half of a pair.
        if (ts == e.end() || !ts->is_number() || ph.size() != 1 ||
            std::string("XiICstf").find(ph) == std::string::npos) {
          continue;
        }
        if ((ph == "s" || ph == "t" || ph == "f") && !e.contains("id")) continue;
        double rel = static_cast<double>(t.base_us) - static_cast<double>(res_->base_time_us) +
                     t.base_frac + ts->get<double>();
        int64_t abs = SatAdd(t.base_us, SatMicros(std::floor(ts->get<double>() + t.base_frac)));
        double dur = 0;
        if (auto d = e.find("dur"); d != e.end() && d->is_number()) dur = d->get<double>();
        if (ph == "X" && !(dur >= 0)) continue;
        if (!InRange(abs, SatAdd(abs, SatMicros(dur)))) continue;
        const int64_t pid = map_pid(e);
        json out = {{"ph", ph}, {"ts", rel}, {"pid", pid}, {"tid", map_tid(pid, e)}};
        if (auto n = e.find("name"); n != e.end() && n->is_string()) {
          out["name"] = *n;
        } else {
          out["name"] = "";
        }
        if (ph == "X") out["dur"] = dur;
        for (const char* k : {"cat", "bp", "s"}) {
          if (auto v = e.find(k); v != e.end() && v->is_string()) out[k] = *v;
        }
        if (auto v = e.find("id"); v != e.end()) {
          // Ids of different traces must not meet, and viewers take only numbers (Perfetto
          // drops a flow whose id is neither a number nor a hex string): each (trace, id)
          // gets the next integer.
          const std::string key =
              std::to_string(fi) + ":" + (v->is_string() ? v->get<std::string>() : Dump(*v));
          auto [it, added] = flow_ids_.try_emplace(key, static_cast<int64_t>(flow_ids_.size()) + 1);
          out["id"] = it->second;
        }
        if (auto a = e.find("args"); a != e.end() && a->is_object()) out["args"] = *a;
        if (ph == "C") {
          // Counters: numeric series only.
          json numeric = json::object();
          if (out.contains("args")) {
            for (auto it = out["args"].begin(); it != out["args"].end(); ++it) {
              if (it->is_number()) numeric[it.key()] = *it;
            }
          }
          if (numeric.empty()) continue;
          out["args"] = std::move(numeric);
        }
        if ((ph == "i" || ph == "I") && out.contains("s") && out["s"] != "g" && out["s"] != "p" &&
            out["s"] != "t") {
          out.erase("s");
        }
        Add(out);
        ++res_->detailed_events;
      }
      // Then the metadata of processes that have events: names prefixed with the file, thread
      // names and sort indices kept when well formed.
      std::set<std::tuple<int64_t, int64_t, std::string>> thread_meta;  // (pid, tid, kind) done
      for (const json& e : meta) {
        std::string key = e.contains("pid") ? Dump(e["pid"]) : "null";
        auto p = pid_of.find(key);
        if (p == pid_of.end()) continue;
        const std::string name = Str(e, "name");
        const json* args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
        if (args == nullptr) continue;
        if (name == "process_name" && args->contains("name") && (*args)["name"].is_string()) {
          // An empty name keeps the "pid N" one.
          const std::string given = (*args)["name"].get<std::string>();
          if (!given.empty()) names[p->second] = label + ": " + given;
          continue;
        }
        // Thread metadata, kept when well formed, once per thread (torch.profiler writes some
        // threads' names twice).
        const char* arg = name == "thread_name"         ? "name"
                          : name == "thread_sort_index" ? "sort_index"
                                                        : nullptr;
        if (arg == nullptr || !args->contains(arg)) continue;
        const json& value = (*args)[arg];
        if (name == "thread_name" ? !value.is_string() : !value.is_number_integer()) continue;
        const int64_t tid = map_tid(p->second, e);
        if (!thread_meta.insert({p->second, tid, name}).second) continue;
        Add({{"name", name},
             {"ph", "M"},
             {"ts", 0},
             {"pid", p->second},
             {"tid", tid},
             {"args", {{arg, value}}}});
        ++res_->metadata_events;
      }
      for (const auto& [pid, name] : names) Metadata(pid, name, pid);
    }
  }

  Env* env_;
  std::string trial_;
  MergeTimelineOptions opt_;
  MergeTimelineResult* res_;
  int64_t base_ = kTimeMax;
  std::vector<SystemMetricEvent> system_;
  std::vector<TimelineEvent> framework_;
  std::vector<TorchTrace> torch_;
  std::vector<TimelineFinding> findings_;
  std::string body_;
  std::map<std::string, int64_t> flow_ids_;  // (trace index:id) -> the id written
};

}  // namespace

Result<MergeTimelineResult> MergeTimeline(Env* env, const std::string& trial_dir,
                                          const std::string& out_path,
                                          const MergeTimelineOptions& options) {
  if (env == nullptr) env = Env::Default();
  if (options.end_us <= options.start_us) {
    return Status::InvalidArgument("timeline range [" + std::to_string(options.start_us) + ", " +
                                   std::to_string(options.end_us) + ") is empty");
  }
  MergeTimelineResult result;
  Merger merger(env, trial_dir, options, &result);
  merger.Gather();
  std::string text = merger.Emit();
  std::string parent(Dirname(out_path));
  if (!parent.empty() && parent != ".") {
    TS_RETURN_IF_ERROR(env->CreateDirs(parent).WithContext("creating the folder of " + out_path));
  }
  TS_RETURN_IF_ERROR(
      env->WriteFileAtomic(out_path, text, /*sync=*/false).WithContext("writing " + out_path));
  return result;
}

}  // namespace trainscope
