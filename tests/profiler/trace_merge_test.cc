// MergeTimeline on a trial with every source (smdebug timeline and system files, a real
// torch.profiler trace, rule findings), time ranges, an empty trial; ValidateTraceEvents on good
// and bad traces.
#include "trainscope/trace_merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "profiler_test_util.h"
#include "trainscope/timeline.h"

namespace trainscope {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr int64_t kT0 = 1795301746ll * 1000000;  // data/smdebug_trial/README.md

// A trial folder: the smdebug fixture, a torch trace, and rule findings (one line unusable).
class MergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    namespace fs = std::filesystem;
    fs::copy(test_util::ProfilerDataDir() + "/smdebug_trial", dir_.path(),
             fs::copy_options::recursive);
    const std::string torch_dir =
        dir_.path() + "/framework/pytorch/detailed_profiling/2026112123/000000002";
    fs::create_directories(torch_dir);
    fs::copy(torch_src_, torch_dir + "/worker0.pt.trace.json");
    test_util::WriteAll(dir_.path() + "/framework/pytorch/detailed_profiling/old.json.gz", "x");
    test_util::WriteAll(
        dir_.path() + "/rule-output/CPUBottleneck/events.jsonl",
        "{\"kind\":\"finding\",\"rule\":\"CPUBottleneck\",\"time_us\":" +
            std::to_string(kT0 + 1000000) +
            ",\"step\":3,\"status\":\"IssuesFound\",\"explanation\":\"CPU bound at step 3\"}\n"
            "{\"explanation\":\"no time\"}\n");
    test_util::WriteAll(
        dir_.path() + "/rule-output/LowGPUUtilization/events.jsonl",
        "{\"time_us\":" + std::to_string(kT0 + 2500000) + ",\"status\":\"IssuesFound\"}\n");
  }
  std::string Out() const { return dir_.path() + "/out/merged.json"; }
  json Load() { return json::parse(test_util::ReadAll(Out())); }

  test_util::TempDir dir_;
  const std::string torch_src_ =
      test_util::ProfilerDataDir() + "/torch_trace/worker0.pt.trace.json";
};

TEST_F(MergeTest, EverySourceInOneValidTrace) {
  auto r = MergeTimeline(Env::Default(), dir_.path(), Out());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string text = test_util::ReadAll(Out());
  Status valid = ValidateTraceEvents(text);
  ASSERT_TRUE(valid.ok()) << valid.ToString();

  // Expected counts come from the inputs themselves.
  json torch = json::parse(test_util::ReadAll(torch_src_));
  int64_t torch_events = 0;
  for (const json& e : torch["traceEvents"]) {
    std::string ph = e["ph"];
    torch_events += ph == "X" || ph == "i" || ph == "s" || ph == "f" || ph == "C";
  }
  EXPECT_EQ(r->detailed_events, torch_events);
  EXPECT_EQ(r->counter_events, 16);  // the system file's good lines
  EXPECT_EQ(r->framework_events, 13);
  EXPECT_EQ(r->rule_events, 2);
  EXPECT_EQ(r->base_time_us, kT0);  // the earliest input (the torch trace is later)
  ASSERT_EQ(r->warnings.size(), 3u);
  std::string warnings = r->warnings[0] + r->warnings[1] + r->warnings[2];
  EXPECT_THAT(warnings, HasSubstr("line 17"));  // the system file's torn line
  EXPECT_THAT(warnings, HasSubstr("old.json.gz"));
  EXPECT_THAT(warnings, HasSubstr("CPUBottleneck/events.jsonl: 1 line(s)"));

  json doc = Load();
  // No displayTimeUnit: "ms" is the default, and Perfetto v20 read the key as the unit of ts.
  EXPECT_FALSE(doc.contains("displayTimeUnit"));
  EXPECT_EQ(doc["otherData"]["start_time_since_epoch_in_micros"], kT0);
  std::map<int64_t, std::string> process;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"]] = e["args"]["name"];
  }
  // The rules' row: one thread per rule that fired, named after it.
  std::map<int64_t, std::string> rule_thread;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 1) {
      EXPECT_TRUE(rule_thread.emplace(e["tid"], e["args"]["name"]).second) << "named twice";
    }
  }
  EXPECT_EQ(rule_thread.size(), 2u);
  double min_ts = 1e300;
  int steps = 0, counters_cpu0 = 0, rule_lines = 0, rule_slices = 0, torch_ops = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M") continue;
    min_ts = std::min(min_ts, e["ts"].get<double>());
    const std::string& pname = process.at(e["pid"]);
    if (e["ph"] == "X" && e["name"] == "Step:ModeKeys.TRAIN") {
      EXPECT_EQ(pname, "Step:ModeKeys.TRAIN (4092-vm)");
      EXPECT_EQ(e["dur"], 7812);
      EXPECT_TRUE(e["args"]["step_num"].is_string());  // types as written
      EXPECT_EQ(e["args"]["pid"], 4242);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(),
                       15625.0 * std::stoi(e["args"]["step_num"].get<std::string>()));
      ++steps;
    }
    if (e["ph"] == "C" && e["name"] == "CPUUtilization cpu0") {
      EXPECT_EQ(pname, "system algo-1");
      ++counters_cpu0;
    }
    if (e["ph"] == "i" && e["pid"] == 1) {
      EXPECT_EQ(e["s"], "g");
      EXPECT_EQ(pname, "rules");
      ++rule_lines;
      if (e["name"] == "CPUBottleneck: CPU bound at step 3") {
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1000000.0);
        EXPECT_EQ(e["args"]["step"], 3);
      } else {
        EXPECT_EQ(e["name"], "LowGPUUtilization: IssuesFound");
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2500000.0);
      }
    }
    if (e["ph"] == "X" && e["pid"] == 1) {
      EXPECT_EQ(e["dur"], 0);
      EXPECT_EQ(e["cat"], "rule");
      // on the thread of its rule
      EXPECT_EQ(e["name"].get<std::string>().rfind(rule_thread.at(e["tid"]) + ": ", 0), 0u)
          << e.dump();
      ++rule_slices;
    }
    if (e["ph"] == "X" && e.value("cat", "") == "cpu_op") {
      EXPECT_THAT(pname, HasSubstr("torch worker0.pt.trace.json"));
      ++torch_ops;
    }
  }
  EXPECT_EQ(min_ts, 0.0);
  EXPECT_EQ(steps, 6);
  EXPECT_EQ(counters_cpu0, 4);
  EXPECT_EQ(rule_lines, 2);
  EXPECT_EQ(rule_slices, 2);
  EXPECT_GT(torch_ops, 0);
  // The torch events sit on the epoch clock: baseTimeNanoseconds/1000 + ts, relative to the base.
  const json& first = torch["traceEvents"][torch["traceEvents"].size() - 1];  // an instant
  double expect = static_cast<double>(torch["baseTimeNanoseconds"].get<int64_t>() / 1000 - kT0) +
                  first["ts"].get<double>();
  bool found = false;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "i" && e["name"] == first["name"]) {
      EXPECT_NEAR(e["ts"].get<double>(), expect, 0.01);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(MergeTest, TimeRangeAndSourceSelection) {
  MergeTimelineOptions o;
  o.start_us = kT0;
  o.end_us = kT0 + 2 * 15625;  // steps 0 and 1
  o.include_rules = false;
  auto r = MergeTimeline(Env::Default(), dir_.path(), Out(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(ValidateTraceEvents(test_util::ReadAll(Out())).ok());
  EXPECT_EQ(r->framework_events, 4);  // two steps, two forwards
  EXPECT_EQ(r->counter_events, 4);    // the samples at t0
  EXPECT_EQ(r->detailed_events, 0);   // the torch trace is half an hour later
  EXPECT_EQ(r->rule_events, 0);

  o = MergeTimelineOptions();
  o.include_system = o.include_framework = o.include_rules = false;
  r = MergeTimeline(Env::Default(), dir_.path(), Out(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->counter_events + r->framework_events + r->rule_events, 0);
  EXPECT_GT(r->detailed_events, 0);
  EXPECT_GT(r->base_time_us, kT0);  // now the torch trace is the earliest
  ASSERT_TRUE(ValidateTraceEvents(test_util::ReadAll(Out())).ok());

  o.end_us = o.start_us;
  EXPECT_EQ(MergeTimeline(Env::Default(), dir_.path(), Out(), o).status().code(),
            StatusCode::kInvalidArgument);
}

// Issue 17: every input of the merger is read bounded. Each kind of input made a 4 GiB sparse
// file (as a damaged or hostile trial can hold) is skipped with a warning naming it and its size,
// never read into memory; the merge still succeeds with the other inputs.
TEST_F(MergeTest, OversizedInputsAreSkippedWithAWarningNotRead) {
  namespace fs = std::filesystem;
  const std::string root = dir_.path();
  const std::vector<std::string> huge = {
      root + "/rule-output/CPUBottleneck/events.jsonl",
      root + "/framework/pytorch/detailed_profiling/2026112123/000000002/worker0.pt.trace.json",
      root + "/system/incremental/2026112122/1795301700.algo-1.json",
      root + "/framework/pevents/2026112122/1795301746125000_4092-vm_pythontimeline.json",
  };
  const uint64_t size = uint64_t{4} << 30;
  for (const std::string& path : huge) {
    ASSERT_TRUE(fs::exists(path)) << path;
    fs::resize_file(path, size);  // sparse: no disk used
  }
  auto r = MergeTimeline(Env::Default(), root, Out());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(ValidateTraceEvents(test_util::ReadAll(Out())).ok());
  for (const std::string& path : huge) {
    bool named = false;
    for (const std::string& w : r->warnings) {
      named |= w.find(path) != std::string::npos && w.find("4294967296 bytes") != std::string::npos;
    }
    EXPECT_TRUE(named) << path << " not in the warnings:\n"
                       << ::testing::PrintToString(r->warnings);
  }
  EXPECT_EQ(r->counter_events, 0);    // the one system file was skipped
  EXPECT_EQ(r->detailed_events, 0);   // the one torch trace too
  EXPECT_GT(r->framework_events, 0);  // the other timeline files were read
  EXPECT_EQ(r->rule_events, 1);       // LowGPUUtilization's finding; CPUBottleneck's skipped
}

TEST(MergeTimelineTest, EmptyTrialGivesAValidEmptyTrace) {
  auto env = NewMemEnv();
  auto r = MergeTimeline(env.get(), "/nothing", "/out/t.json");
  ASSERT_TRUE(r.ok());
  auto text = env->ReadFile("/out/t.json");
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(ValidateTraceEvents(*text).ok());
  EXPECT_EQ(json::parse(*text)["traceEvents"].size(), 0u);
  EXPECT_TRUE(r->warnings.empty());
}

// Issue 15: the merger reads events.jsonl with the findings' one codec (finding.h). A line the
// codec rejects (a key of the wrong type) is skipped with the warning, though it has a time_us;
// a line that leaves out what its folder says (rule, status) is a finding; the args are the line.
TEST(MergeTimelineTest, RuleLinesAreReadWithTheFindingsCodec) {
  auto env = NewMemEnv();
  const std::string t = std::to_string(kT0);
  ASSERT_TRUE(env->CreateDirs("/t/rule-output/Overfit").ok());
  ASSERT_TRUE(env->WriteFileAtomic(
                     "/t/rule-output/Overfit/events.jsonl",
                     "{\"time_us\":" + t + ",\"step\":\"three\",\"explanation\":\"wrong type\"}\n" +
                         "{\"time_us\":" + t + ",\"mode\":\"TRAINING\"}\n" + "{\"time_us\":" + t +
                         ",\"explanation\":\"kept\",\"future_key\":[1]}\n",
                     false)
                  .ok());
  auto r = MergeTimeline(env.get(), "/t", "/out/t.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rule_events, 1);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("Overfit/events.jsonl: 2 line(s)"));
  auto text = env->ReadFile("/out/t.json");
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(ValidateTraceEvents(*text).ok());
  const json doc = json::parse(*text);
  int instants = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "i") continue;
    ++instants;
    EXPECT_EQ(e["name"], "Overfit: kept");
    EXPECT_EQ(e["args"]["future_key"], json::array({1})) << "the whole line";
  }
  EXPECT_EQ(instants, 1);
}

TEST(MergeTimelineTest, OutputWriteFailureIsAnError) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  env.SetCreateFails(true);
  auto r = MergeTimeline(&env, "/nothing", "/out/t.json");
  EXPECT_EQ(r.status().code(), StatusCode::kIOError);
  EXPECT_THAT(r.status().message(), HasSubstr("/out/t.json"));
}

TEST(ValidateTraceEventsTest, OurTimelineFilesPass) {
  auto env = NewMemEnv();
  TimelineWriterOptions o;
  o.node_id = "n";
  o.flush_interval_millis = 0;
  auto w = TimelineWriter::Create(env.get(), "/t", o);
  ASSERT_TRUE(w.ok());
  (*w)->Record("Forward", "f", (*w)->start_time_us() + 10, 5, {{"step_num", 1}});
  (*w)->RecordInstant("Forward", "mark", (*w)->start_time_us() + 20, {}, 'p');
  ASSERT_TRUE((*w)->Close().ok());
  auto text = env->ReadFile("/t/" + (*w)->finished_files()[0]);
  ASSERT_TRUE(text.ok());
  Status s = ValidateTraceEvents(*text);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(ValidateTraceEventsTest, RejectsEachKindOfMistake) {
  const std::string ok_x = R"({"name":"a","ph":"X","ts":1,"dur":2,"pid":1,"tid":1})";
  ASSERT_TRUE(ValidateTraceEvents("[" + ok_x + "]").ok());
  ASSERT_TRUE(
      ValidateTraceEvents(R"({"traceEvents":[)" + ok_x + R"(],"displayTimeUnit":"ns"})").ok());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[1", "not valid JSON"},
      {"7", "neither an array nor an object"},
      {R"({"events":[]})", "no \"traceEvents\""},
      {R"({"traceEvents":[],"displayTimeUnit":"s"})", "displayTimeUnit"},
      {R"([5])", "event 0 is not an object"},
      {R"([{"name":"a","ts":1,"pid":1,"tid":1}])", "no string \"ph\""},
      {R"([{"name":"a","ph":"Q","ts":1,"pid":1,"tid":1}])", "unknown ph \"Q\""},
      {R"([{"name":"a","ph":"X","dur":1,"pid":1,"tid":1}])", "no numeric \"ts\""},
      {R"([{"name":"a","ph":"X","ts":"1","dur":1,"pid":1,"tid":1}])", "no numeric \"ts\""},
      {R"([{"name":"a","ph":"X","ts":1,"dur":1,"pid":"Spans","tid":1}])", "integer \"pid\""},
      {R"([{"name":"a","ph":"X","ts":1,"dur":1,"pid":1}])", "integer \"tid\""},
      {R"([{"ph":"X","ts":1,"dur":1,"pid":1,"tid":1}])", "no string \"name\""},
      {R"([{"name":"a","ph":"X","ts":1,"pid":1,"tid":1}])", "without numeric \"dur\""},
      {R"([{"name":"a","ph":"X","ts":1,"dur":-1,"pid":1,"tid":1}])", "negative dur"},
      {R"([{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":[1]}])", "not an object"},
      {R"([{"name":"c","ph":"C","ts":1,"pid":1,"tid":0,"args":{}}])", "without values"},
      {R"([{"name":"c","ph":"C","ts":1,"pid":1,"tid":0,"args":{"v":"hi"}}])", "series \"v\""},
      {R"([{"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{}}])", "args.name"},
      {R"([{"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":0,"args":{"sort_index":"1"}}])",
       "integer args.sort_index"},
      {R"([{"name":"whatever","ph":"M","ts":0,"pid":1,"tid":0,"args":{}}])", "unknown kind"},
      {R"([{"name":"i","ph":"i","ts":0,"pid":1,"tid":0,"s":"x"}])", "scope"},
      {R"([{"name":"fl","ph":"s","ts":0,"pid":1,"tid":0}])", "without \"id\""},
      {R"([{"name":"b","ph":"B","ts":1,"pid":1,"tid":1}])", "1 B event(s) without E"},
      {R"([{"ph":"E","ts":1,"pid":1,"tid":1},{"name":"b","ph":"B","ts":2,"pid":1,"tid":1}])",
       "event 0 (ph E) ends a span never begun"},
  };
  for (const auto& [text, why] : bad) {
    Status s = ValidateTraceEvents(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(why)) << text;
  }
  // Balanced, nested, in file order at equal timestamps; B/E on another thread are separate.
  EXPECT_TRUE(ValidateTraceEvents(R"([
      {"name":"o","ph":"B","ts":1,"pid":1,"tid":1},{"name":"i","ph":"B","ts":1,"pid":1,"tid":1},
      {"ph":"E","ts":2,"pid":1,"tid":1},{"ph":"E","ts":3,"pid":1,"tid":1},
      {"name":"z","ph":"B","ts":3,"pid":1,"tid":1},{"ph":"E","ts":3,"pid":1,"tid":1},
      {"name":"o","ph":"B","ts":0,"pid":1,"tid":2},{"ph":"E","ts":9,"pid":1,"tid":2}])")
                  .ok());
  // A raw torch.profiler trace is not strict (string pids such as "Spans"): it is remapped when
  // merged.
  std::string torch =
      test_util::ReadAll(test_util::ProfilerDataDir() + "/torch_trace/worker0.pt.trace.json");
  EXPECT_THAT(ValidateTraceEvents(torch).message(), HasSubstr("pid"));
}

}  // namespace
}  // namespace trainscope
