// ValidateTraceEvents: the strict Chrome trace check (docs/formats/timeline.md).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "trainscope/trace_merge.h"

namespace trainscope {
using nlohmann::json;

namespace {

const std::set<std::string, std::less<>> kPhases = {"X", "B", "E", "i", "I", "C", "M", "s", "t",
                                                    "f", "b", "n", "e", "P", "O", "N", "D", "R"};

std::string Describe(size_t index, const json& e) {
  std::string s = "event " + std::to_string(index);
  if (auto ph = e.find("ph"); ph != e.end() && ph->is_string()) {
    s += " (ph " + ph->get<std::string>();
    if (auto n = e.find("name"); n != e.end() && n->is_string()) {
      s += ", name \"" + n->get<std::string>() + "\"";
    }
    s += ")";
  }
  return s;
}

// The problem with event e, or "".
std::string Check(const json& e) {
  if (!e.is_object()) return "is not an object";
  auto ph_it = e.find("ph");
  if (ph_it == e.end() || !ph_it->is_string()) return "has no string \"ph\"";
  const std::string& ph = ph_it->get_ref<const std::string&>();
  if (!kPhases.count(ph)) return "has unknown ph \"" + ph + "\"";
  auto ts = e.find("ts");
  if (ts == e.end() || !ts->is_number()) return "has no numeric \"ts\"";
  auto pid = e.find("pid");
  if (pid == e.end() || !pid->is_number_integer()) return "has no integer \"pid\"";
  auto tid = e.find("tid");
  if (tid == e.end() || !tid->is_number_integer()) return "has no integer \"tid\"";
  auto name = e.find("name");
  if (ph != "E" && (name == e.end() || !name->is_string())) return "has no string \"name\"";
  auto args = e.find("args");
  if (args != e.end() && !args->is_object()) return "has \"args\" that is not an object";
  if (ph == "X") {
    auto dur = e.find("dur");
    if (dur == e.end() || !dur->is_number()) return "is complete (X) without numeric \"dur\"";
    if (dur->get<double>() < 0) return "has negative dur " + dur->dump();
  } else if (ph == "C") {
    if (args == e.end() || args->empty()) return "is a counter without values in \"args\"";
    for (auto it = args->begin(); it != args->end(); ++it) {
      if (!it->is_number()) return "is a counter whose series \"" + it.key() + "\" is not a number";
    }
  } else if (ph == "M") {
    const std::string& n = name->get_ref<const std::string&>();
    if (args == e.end()) return "is metadata without \"args\"";
    if (n == "process_name" || n == "thread_name") {
      auto v = args->find("name");
      if (v == args->end() || !v->is_string()) return "is " + n + " without string args.name";
    } else if (n == "process_sort_index" || n == "thread_sort_index") {
      auto v = args->find("sort_index");
      if (v == args->end() || !v->is_number_integer()) {
        return "is " + n + " without integer args.sort_index";
      }
    } else if (n == "process_labels") {
      auto v = args->find("labels");
      if (v == args->end() || !v->is_string())
        return "is process_labels without string args.labels";
    } else {
      return "is metadata of unknown kind \"" + n + "\"";
    }
  } else if (ph == "i" || ph == "I") {
    if (auto s = e.find("s"); s != e.end()) {
      if (!s->is_string() || (*s != "g" && *s != "p" && *s != "t")) {
        return "is an instant with scope other than g, p, t";
      }
    }
  } else if (ph == "s" || ph == "t" || ph == "f") {
    auto id = e.find("id");
    if (id == e.end() || !(id->is_string() || id->is_number_integer())) {
      return "is a flow event without \"id\"";
    }
  }
  return "";
}

}  // namespace

Status ValidateTraceEvents(std::string_view json_text) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Status::InvalidArgument("trace is not valid JSON");
  const json* events = &root;
  if (root.is_object()) {
    auto it = root.find("traceEvents");
    if (it == root.end() || !it->is_array()) {
      return Status::InvalidArgument("trace object has no \"traceEvents\" array");
    }
    events = &*it;
    if (auto u = root.find("displayTimeUnit"); u != root.end() && *u != "ms" && *u != "ns") {
      return Status::InvalidArgument("displayTimeUnit must be \"ms\" or \"ns\"");
    }
  } else if (!root.is_array()) {
    return Status::InvalidArgument("trace is neither an array nor an object");
  }
  // B/E per thread: (ts, index, +1/-1).
  std::map<std::pair<int64_t, int64_t>, std::vector<std::tuple<double, size_t, int>>> begin_end;
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    std::string problem = Check(e);
    if (!problem.empty()) return Status::InvalidArgument(Describe(i, e) + " " + problem);
    const std::string& ph = e["ph"].get_ref<const std::string&>();
    if (ph == "B" || ph == "E") {
      begin_end[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].emplace_back(
          e["ts"].get<double>(), i, ph == "B" ? 1 : -1);
    }
  }
  for (auto& [thread, marks] : begin_end) {
    // Timestamp order; equal timestamps keep the order of the file (as viewers process them).
    std::stable_sort(marks.begin(), marks.end(),
                     [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    int depth = 0;
    for (const auto& [ts, index, delta] : marks) {
      depth += delta;
      if (depth < 0) {
        return Status::InvalidArgument(Describe(index, (*events)[index]) + " ends a span never " +
                                       "begun on pid " + std::to_string(thread.first) + " tid " +
                                       std::to_string(thread.second));
      }
    }
    if (depth != 0) {
      return Status::InvalidArgument(std::to_string(depth) + " B event(s) without E on pid " +
                                     std::to_string(thread.first) + " tid " +
                                     std::to_string(thread.second));
    }
  }
  return Status::OK();
}

}  // namespace trainscope
