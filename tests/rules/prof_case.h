// Data-driven profiler-rule cases (tests/rules/profiler_cases/<Rule>/*.json, format in
// tests/rules/profiler_cases/README.md): a case describes system metrics and framework spans
// over simulated time, and the verdict expected. RunProfilerCase writes them as the profiler
// does, with the profiler's own writers (AppendSystemMetricLines into system/incremental minute
// files, TimelineWriter for framework/pevents on a simulated clock), chunk by chunk, and lets a
// real RuleRunner follow the trial on the same clock; it returns what the rule wrote
// (events.jsonl and status.json, read back from disk).
#pragma once

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rule_case.h"
#include "trainscope/profiler_format.h"
#include "trainscope/system_sampler.h"
#include "trainscope/timeline.h"

namespace trainscope::rules_test {

// Minute-aligned start of the simulated run (epoch microseconds).
inline constexpr int64_t kSimStartUs = 1'700'000'040'000'000;

// A value at sample k of n in a segment: a number, {"linear": [a, b]}, {"normal": [m, s]},
// {"uniform": [lo, hi]}, {"alternate": [a, b]} (a, b, a, ...), {"spike": {"base": a, "every": n,
// "value": b}}.
inline double SpecValue(const Json& spec, int64_t k, int64_t n, std::mt19937_64& rng) {
  if (spec.is_number()) return spec.get<double>();
  if (spec.contains("linear")) {
    const double a = spec["linear"][0], b = spec["linear"][1];
    return n > 1 ? a + (b - a) * static_cast<double>(k) / static_cast<double>(n - 1) : a;
  }
  if (spec.contains("normal")) {
    std::normal_distribution<double> d(spec["normal"][0].get<double>(),
                                       spec["normal"][1].get<double>());
    return d(rng);
  }
  if (spec.contains("uniform")) {
    std::uniform_real_distribution<double> d(spec["uniform"][0].get<double>(),
                                             spec["uniform"][1].get<double>());
    return d(rng);
  }
  if (spec.contains("alternate")) return spec["alternate"][static_cast<size_t>(k % 2)];
  if (spec.contains("spike")) {
    const Json& s = spec["spike"];
    return k % s["every"].get<int64_t>() == s["every"].get<int64_t>() - 1 ? s["value"].get<double>()
                                                                          : s["base"].get<double>();
  }
  ADD_FAILURE() << "value spec without a generator: " << spec.dump();
  return 0;
}

inline double Clamp100(double v) { return std::min(100.0, std::max(0.0, v)); }

struct SimSample {
  int64_t ts_us;
  std::string node;
  SystemSample sample;
};

struct SimSpan {
  std::string phase, name;
  int64_t start_us, dur_us;
  int64_t step = -1;
  bool phases_dropped = false;  // a step span with "phases": false (PhaseMinIntervalInMilliseconds)
  bool saved = false;           // a step span with "saved": true (the debugger saved tensors)
  int64_t model_calls = 0;      // >= 2: a step span with "model_calls" (the model's calls)
  int64_t end() const { return start_us + dur_us; }
};

// Expands a case's segments into samples and spans.
inline void ExpandCase(const Json& c, std::vector<SimSample>* samples, std::vector<SimSpan>* spans,
                       int64_t* end_us) {
  std::mt19937_64 rng(c.value("seed", uint64_t{1}));
  const int64_t interval_us = c.value("interval_ms", int64_t{500}) * 1000;
  int64_t t0 = kSimStartUs;
  int64_t step = 0;
  for (const Json& seg : c["segments"]) {
    const int64_t dur_us = static_cast<int64_t>(seg["seconds"].get<double>() * 1e6);
    std::vector<std::string> nodes = seg.value("nodes", std::vector<std::string>{"algo-1"});
    const int64_t n = dur_us / interval_us;
    if (seg.value("system", true)) {
      for (const std::string& node : nodes) {
        for (int64_t k = 0; k < n; ++k) {
          SimSample s;
          s.ts_us = t0 + k * interval_us;
          s.node = node;
          s.sample.timestamp_us = static_cast<uint64_t>(s.ts_us);
          s.sample.has_rates = true;
          const int cores = seg.value("cores", 2);
          for (int i = 0; i < cores; ++i) {
            s.sample.cpu_core_percent.push_back(
                Clamp100(SpecValue(seg.value("cpu", Json(20)), k, n, rng)));
            s.sample.iowait_core_percent.push_back(
                Clamp100(SpecValue(seg.value("iowait", Json(0)), k, n, rng)));
          }
          double total = 0;
          for (double v : s.sample.cpu_core_percent) total += v;
          s.sample.cpu_total_percent = total / cores;
          s.sample.memory_used_percent =
              Clamp100(SpecValue(seg.value("memory_percent", Json(30)), k, n, rng));
          if (seg.contains("rss_mb")) {
            s.sample.process_rss_bytes =
                static_cast<uint64_t>(SpecValue(seg["rss_mb"], k, n, rng) * 1048576.0);
            s.sample.process_count = 1;
          }
          if (seg.contains("cpu_wait")) {  // ProcessTreeCPUWaitPercent
            s.sample.process_cpu_wait_percent = SpecValue(seg["cpu_wait"], k, n, rng);
            s.sample.process_count = 1;
          }
          const int gpus = seg.value("gpus", 0);
          for (int g = 0; g < gpus; ++g) {
            auto pick = [&](const char* key, double def) {
              if (!seg.contains(key)) return def;
              const Json& v = seg[key];
              return Clamp100(SpecValue(v.is_array() ? v[static_cast<size_t>(g)] : v, k, n, rng));
            };
            GpuMetrics m;
            m.index = g;
            m.utilization_percent = pick("gpu_util", 50);
            m.memory_total_bytes = uint64_t{80} << 30;
            m.memory_used_bytes = static_cast<uint64_t>(pick("gpu_mem", 40) / 100.0 *
                                                        static_cast<double>(*m.memory_total_bytes));
            s.sample.gpus.push_back(m);
          }
          samples->push_back(std::move(s));
        }
      }
    }
    if (seg.contains("steps")) {
      const Json& st = seg["steps"];
      const std::string phase = st.value("phase", std::string("Step:ModeKeys.TRAIN"));
      const int64_t ms = static_cast<int64_t>(st.value("ms", 20.0) * 1000);
      const int64_t data_us = static_cast<int64_t>(st.value("data_ms", 0.0) * 1000);
      // The loop's own work inside the step, before the model's spans (a batch made in the loop).
      const int64_t loop_us = static_cast<int64_t>(st.value("loop_ms", 0.0) * 1000);
      const int64_t every = st.value("stall_every", int64_t{0});
      const int64_t stall_us = static_cast<int64_t>(st.value("stall_ms", 0.0) * 1000);
      const int workers = st.value("workers", 0);
      const double jitter = st.value("jitter", 0.0);
      // Forward/Backward spans on every k-th step only, the others marked "phases": false, as
      // the hook records them with PhaseMinIntervalInMilliseconds.
      const int64_t phases_every = st.value("phases_every", int64_t{1});
      // Steps that saved tensors (their span marked "saved": true, as the hook marks them):
      // every saved_every-th (0: none), and the stalled ones when stalls_saved.
      const int64_t saved_every = st.value("saved_every", int64_t{0});
      const bool stalls_saved = st.value("stalls_saved", false);
      // The model called this many times a step (a value spec: "linear" over the segment's
      // time, "spike" and "alternate" over its steps), the
      // loop's own work between the calls (a rollout: an environment stepped between the
      // policy's calls), one backward at the end; the step takes ms_per_call more per call, and
      // its span says how many calls it made ("model_calls") unless record_calls is false.
      const Json calls_spec = st.value("forward_calls", Json(1));
      const double ms_per_call = st.value("ms_per_call", 0.0);
      const bool record_calls = st.value("record_calls", true);
      std::normal_distribution<double> noise(0.0, 1.0);
      const bool calls_by_time = calls_spec.is_object() && calls_spec.contains("linear");
      int64_t t = t0;
      for (int64_t seg_step = 0;; ++seg_step) {
        const auto forward_calls = std::max<int64_t>(
            1, std::llround(calls_by_time ? SpecValue(calls_spec, t - t0, dur_us, rng)
                                          : SpecValue(calls_spec, seg_step, 0, rng)));
        const int64_t step_us = ms + static_cast<int64_t>(ms_per_call * 1000) * forward_calls;
        int64_t d = step_us;
        if (jitter > 0)
          d = std::max<int64_t>(1, static_cast<int64_t>(step_us * (1 + jitter * noise(rng))));
        const bool stalled = every > 0 && step % every == every - 1;
        if (stalled) d += stall_us;
        if (t + data_us + loop_us + d > t0 + dur_us) break;
        for (int w = 0; w < workers; ++w) {
          spans->push_back(
              {"DataLoaderWorker", "DataLoaderWorker", t, std::max<int64_t>(data_us, 1)});
        }
        if (data_us > 0)
          spans->push_back({"DataLoaderIter", "DataLoaderIter::GetNext", t, data_us, step});
        t += data_us;
        const bool phased = step % phases_every == 0;
        const bool saved =
            (saved_every > 0 && step % saved_every == 0) || (stalls_saved && stalled);
        spans->push_back({phase, "Step", t, loop_us + d, step, !phased, saved,
                          record_calls && forward_calls >= 2 ? forward_calls : 0});
        if (phased && forward_calls > 1) {
          // Call i at the end of its share of the loop's work: [work, call] x forward_calls.
          const int64_t call_us = std::max<int64_t>(1, d / 3 / forward_calls);
          const int64_t work_us = loop_us / forward_calls;
          for (int64_t i = 0; i < forward_calls; ++i) {
            spans->push_back(
                {"Forward", "forward", t + (i + 1) * work_us + i * call_us, call_us, step});
          }
          spans->push_back(
              {"Backward(post-forward)", "backward", t + loop_us + d / 3, d / 2, step});
        } else if (phased) {
          spans->push_back({"Forward", "forward", t + loop_us, d / 3, step});
          spans->push_back(
              {"Backward(post-forward)", "backward", t + loop_us + d / 3, d / 2, step});
        }
        t += loop_us + d;
        ++step;
      }
    }
    t0 += dur_us;
  }
  *end_us = t0;
  std::stable_sort(spans->begin(), spans->end(),
                   [](const SimSpan& a, const SimSpan& b) { return a.end() < b.end(); });
}

struct ProfilerCaseOutcome {
  bool created = false;
  std::string create_error;
  std::vector<RuleFinding> findings;
  Json status;
  size_t state_bytes = 0;  // Rule::StateBytes() at the end
};

// `companions`: more rules (default parameters) evaluated by the same runner beside the case's
// rule, as `trainscope run`'s profiler worker does; the outcome is the case's rule's.
inline ProfilerCaseOutcome RunProfilerCase(const Json& c, const std::string& rule_name,
                                           const std::vector<std::string>& companions = {}) {
  ProfilerCaseOutcome out;
  std::map<std::string, std::string> params;
  if (c.contains("params")) {
    for (const auto& [k, v] : c["params"].items())
      params[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  auto rule = CreateRule(rule_name, params);
  if (!rule.ok()) {
    out.create_error = rule.status().ToString();
    return out;
  }
  out.created = true;
  TempDir tmp;
  const std::string base = tmp.path() + "/trial";
  {
    WriterOptions wo;
    wo.quiet = true;
    wo.write_end_marker = false;
    auto w = TrialWriter::Open(base, wo);
    EXPECT_TRUE(w.ok());
    if (!w.ok()) return out;
    EXPECT_TRUE((*w)->WriteCollections(R"({"collections": {}, "_meta": {"num_workers": 1}})").ok());
    EXPECT_TRUE((*w)->Close().ok());
  }
  auto trial = Trial::Open(base, FastTrialOptions());
  EXPECT_TRUE(trial.ok()) << trial.status().ToString();
  if (!trial.ok()) return out;

  std::vector<SimSample> samples;
  std::vector<SimSpan> spans;
  int64_t end_us = 0;
  ExpandCase(c, &samples, &spans, &end_us);

  int64_t clock_us = kSimStartUs;
  RunnerOptions ro;
  ro.now_micros = [&clock_us]() { return clock_us; };
  ro.status_interval = std::chrono::milliseconds(0);
  RuleRunner runner(std::shared_ptr<Trial>(std::move(trial).value()), ro);
  // The companions first: the case's rule is then the last to read in each round, so it gets
  // what an earlier rule's read brought in.
  for (const auto& name : companions) {
    if (name == rule_name) continue;
    auto companion = CreateRule(name, {});
    EXPECT_TRUE(companion.ok()) << companion.status().ToString();
    if (companion.ok()) {
      EXPECT_TRUE(runner.AddRule(std::move(companion).value()).ok());
    }
  }
  EXPECT_TRUE(runner.AddRule(std::move(rule).value()).ok());

  TimelineWriterOptions to;
  to.node_id = "1234-testhost";
  to.start_time_us = static_cast<uint64_t>(kSimStartUs);
  to.clock = [&clock_us]() { return static_cast<uint64_t>(clock_us); };
  to.flush_interval_millis = 0;
  to.report = [](std::string_view) {};
  // Timeline files close after this much simulated time (`trainscope run` sets 2 s).
  to.close_interval_seconds = c.value("timeline_close_seconds", 60.0);
  auto tw = TimelineWriter::Create(Env::Default(), base, to);
  EXPECT_TRUE(tw.ok());
  if (!tw.ok()) return out;

  const int64_t chunk_us = static_cast<int64_t>(c.value("chunk_seconds", 5.0) * 1e6);
  size_t si = 0, fi = 0;
  bool done = false;
  for (int64_t t = kSimStartUs + chunk_us; !done; t += chunk_us) {
    clock_us = std::min(t, end_us);
    for (; si < samples.size() && samples[si].ts_us < clock_us; ++si) {
      const SimSample& s = samples[si];
      const std::string path =
          base + "/" +
          profiler_format::SystemMetricsFilePath(s.ts_us / 1000000, std::stoi(s.node.substr(5)));
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      std::string lines;
      AppendSystemMetricLines(s.sample, s.node, &lines);
      std::ofstream(path, std::ios::app) << lines;
    }
    for (; fi < spans.size() && spans[fi].end() < clock_us; ++fi) {
      const SimSpan& s = spans[fi];
      TimelineArgs args;
      if (s.step >= 0) args.push_back(TimelineArg("step_num", std::to_string(s.step)));
      if (s.phases_dropped) args.push_back(TimelineArg("phases", false));
      if (s.saved) args.push_back(TimelineArg("saved", true));
      if (s.model_calls >= 2) args.push_back(TimelineArg("model_calls", s.model_calls));
      (*tw)->Record(s.phase, s.name, static_cast<uint64_t>(s.start_us),
                    static_cast<uint64_t>(s.dur_us), std::move(args));
    }
    EXPECT_TRUE((*tw)->Flush().ok());
    auto polled = runner.Poll();
    EXPECT_TRUE(polled.ok()) << polled.status().ToString();
    done = clock_us >= end_us || (polled.ok() && *polled);
  }
  EXPECT_TRUE((*tw)->Close().ok());
  EXPECT_TRUE(WriteEndOfJob(Env::Default(), base).ok());
  done = false;
  for (int i = 0; i < 500 && !done; ++i) {
    clock_us += 200'000;
    auto polled = runner.Poll();
    EXPECT_TRUE(polled.ok()) << polled.status().ToString();
    done = polled.ok() && *polled;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(done) << "the runner did not finish after the end marker";

  out.state_bytes = runner.stats().rule_state_bytes;
  const std::string dir = runner.RuleOutputDir(rule_name);
  std::stringstream events(ReadText(dir + "/" + std::string(rule_output_format::kEventsFile)));
  for (std::string line; std::getline(events, line);) {
    if (line.empty()) continue;
    auto f = RuleFindingFromJson(line);
    EXPECT_TRUE(f.ok()) << f.status().ToString() << " in " << line;
    if (f.ok()) out.findings.push_back(*f);
  }
  out.status = Json::parse(ReadText(dir + "/" + std::string(rule_output_format::kStatusFile)),
                           nullptr, false);
  return out;
}

}  // namespace trainscope::rules_test
