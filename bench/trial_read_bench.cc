// Trial read benchmark: opening a 10,000-step x 50-tensor trial and listing it, reading 1 MB
// tensor values against memcpy of the same bytes, and how soon a new step becomes visible.
//
//   build/bench/trial_read_bench
//       builds the trials once, runs, prints a table
//   build/bench/trial_read_bench --trial=PATH
//       also times opening an existing trial (e.g. the smdebug-written one of
//       bench/trial_open.py)
//   build/bench/trial_read_bench --make_trial=DIR [--steps=10000 --tensors=50 --elems=256]
//       only writes a trial (for the Python benchmark)
//
// The trials are cached under $TMPDIR/trainscope-bench-trials/ (a ".complete" stamp marks a
// finished build). The page cache stays warm: "cold" means a new Trial object each time.
// What each figure is compared with: open + list against smdebug's create_trial + tensor_names
// (bench/trial_open.py measures that side: the goal is >= 20x faster); value reads against
// memcpy of the same bytes; visibility latency against the 100 ms goal.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "trainscope/reductions.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope {
namespace {

using Clock = std::chrono::steady_clock;

struct TrialShape {
  int64_t steps = 10000;
  int64_t tensors = 50;
  int64_t elems = 256;
};

std::string CacheDir() {
  const char* t = getenv("TMPDIR");
  return std::string(t && *t ? t : "/tmp") + "/trainscope-bench-trials";
}

std::string TensorName(int64_t i) {
  char buf[32];
  snprintf(buf, sizeof(buf), "layer%03lld/weight", static_cast<long long>(i));
  return buf;
}

std::string CollectionsJson(const TrialShape& s) {
  std::string names;
  for (int64_t i = 0; i < s.tensors; ++i) names += (i ? ",\"" : "\"") + TensorName(i) + "\"";
  return R"({"collections": {"weights": {"name": "weights", "include_regex": ["weight"],
    "tensor_names": [)" +
         names + R"(], "reduction_config": {"save_raw_tensor": true,
    "reductions": "mean,max,l2_norm"}, "save_config": null, "save_histogram": true}},
    "_meta": {"num_workers": 1}})";
}

// Writes `shape` with TrialWriter: mode TRAIN, one worker, end marker. Every 10th tensor also
// gets saved reductions (mean, max, l2). Values come from a pool of random arrays.
Status WriteBigTrial(const std::string& dir, const TrialShape& shape) {
  WriterOptions o;
  o.quiet = true;
  TS_ASSIGN_OR_RETURN(auto w, TrialWriter::Open(dir, o));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> pool(97, std::vector<float>(shape.elems));
  for (auto& v : pool) {
    for (float& x : v) x = normal(rng);
  }
  const Reduction reds[] = {
      {ReductionOp::kMean, false}, {ReductionOp::kMax, false}, {ReductionOp::kL2, false}};
  for (int64_t s = 0; s < shape.steps; ++s) {
    TS_RETURN_IF_ERROR(w->BeginStep(s, Mode::kTrain, s));
    for (int64_t i = 0; i < shape.tensors; ++i) {
      const auto& v = pool[(s * shape.tensors + i) % pool.size()];
      TensorView view{DType::kF32, v.data(), {shape.elems}, {}, {}};
      TS_RETURN_IF_ERROR(w->AddTensor(TensorName(i), view));
      if (i % 10 == 0) {
        for (Reduction r : reds) {
          TS_ASSIGN_OR_RETURN(double d, ComputeReduction(view, r));
          const float f = static_cast<float>(d);
          TS_RETURN_IF_ERROR(w->AddTensor(ReductionTensorName(TensorName(i), r),
                                          TensorView::Scalar(DType::kF32, &f)));
        }
      }
    }
    TS_RETURN_IF_ERROR(w->EndStep());
    if (s == 0) TS_RETURN_IF_ERROR(w->WriteCollections(CollectionsJson(shape)));
  }
  return w->Close();
}

// The cached trial for `shape` (built on first use).
std::string CachedTrial(const std::string& name, const TrialShape& shape) {
  const std::string dir = CacheDir() + "/" + name;
  const std::string stamp = dir + ".complete";
  if (std::filesystem::exists(stamp)) return dir;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(CacheDir());
  fprintf(stderr, "building %s (%lld steps x %lld tensors x %lld floats; cached)...\n", dir.c_str(),
          static_cast<long long>(shape.steps), static_cast<long long>(shape.tensors),
          static_cast<long long>(shape.elems));
  const auto t0 = Clock::now();
  Status s = WriteBigTrial(dir, shape);
  if (!s.ok()) {
    fprintf(stderr, "building %s failed: %s\n", dir.c_str(), s.ToString().c_str());
    exit(1);
  }
  fprintf(stderr, "built in %.1f s\n", std::chrono::duration<double>(Clock::now() - t0).count());
  std::ofstream(stamp) << "ok\n";
  return dir;
}

std::string BigTrial() { return CachedTrial("trainscope_10000steps_50tensors_256f32", {}); }
// 64 steps of one 1 MiB float32 tensor.
std::string MegabyteTrial() {
  return CachedTrial("trainscope_64steps_1tensor_1MiB", {64, 1, 1 << 18});
}

TrialOptions BenchOptions() {
  TrialOptions o;
  o.end_delay = std::chrono::milliseconds(0);  // smdebug's side is timed with its delay at 0 too
  return o;
}

long RssKiB() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, rss = 0;
  f >> pages >> rss;
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

// Open + Steps + TensorNames with a new Trial each iteration.
void OpenAndList(benchmark::State& state, const std::string& path) {
  size_t names = 0, steps = 0;
  long rss_delta = 0;
  for (auto _ : state) {
    const long before = RssKiB();
    auto t = Trial::Open(path, BenchOptions());
    if (!t.ok()) {
      state.SkipWithError(t.status().ToString().c_str());
      return;
    }
    steps = (*t)->Steps().size();
    auto n = (*t)->TensorNames();
    names = n.ok() ? n->size() : 0;
    rss_delta = RssKiB() - before;
    benchmark::DoNotOptimize(n);
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["tensors"] = static_cast<double>(names);
  state.counters["index_rss_MiB"] = static_cast<double>(rss_delta) / 1024.0;
}

void BM_OpenListBigTrial(benchmark::State& state) { OpenAndList(state, BigTrial()); }
BENCHMARK(BM_OpenListBigTrial)->Unit(benchmark::kMillisecond)->MinTime(2.0);

std::string g_extra_trial;
void BM_OpenListGivenTrial(benchmark::State& state) { OpenAndList(state, g_extra_trial); }

// One Value() per iteration, over 64 steps of a 1 MiB tensor; `consume`: also sum the floats.
void ValueRead(benchmark::State& state, bool consume) {
  auto t = Trial::Open(MegabyteTrial(), BenchOptions());
  if (!t.ok()) {
    state.SkipWithError(t.status().ToString().c_str());
    return;
  }
  const auto steps = (*t)->Steps();
  size_t i = 0;
  double sink = 0;
  for (auto _ : state) {
    auto v = (*t)->Value("layer000/weight", steps[i++ % steps.size()]);
    if (!v.ok()) {
      state.SkipWithError(v.status().ToString().c_str());
      return;
    }
    if (consume) {
      const float* p = static_cast<const float*>(v->data);
      const int64_t n = v->num_elements();  // once: a call per element would be the benchmark
      float acc = 0;
      for (int64_t k = 0; k < n; ++k) acc += p[k];
      sink += acc;
    }
    benchmark::DoNotOptimize(v->data);
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(state.iterations() * (int64_t{1} << 20));
}
void BM_Value1MiB(benchmark::State& state) { ValueRead(state, false); }
void BM_Value1MiBAndSum(benchmark::State& state) { ValueRead(state, true); }
BENCHMARK(BM_Value1MiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Value1MiBAndSum)->Unit(benchmark::kMicrosecond);

// The limit both compare with: memcpy of 1 MiB out of 64 MiB of distinct sources, and a plain
// sum over them (no trial involved).
void BM_Memcpy1MiB(benchmark::State& state) {
  const size_t n = size_t{1} << 20;
  std::vector<std::vector<char>> src(64, std::vector<char>(n, 1));
  std::vector<char> dst(n);
  size_t i = 0;
  for (auto _ : state) {
    std::memcpy(dst.data(), src[i++ % src.size()].data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}
void BM_Sum1MiB(benchmark::State& state) {
  const size_t n = (size_t{1} << 20) / sizeof(float);
  std::vector<std::vector<float>> src(64, std::vector<float>(n, 1.0f));
  size_t i = 0;
  for (auto _ : state) {
    const float* p = src[i++ % src.size()].data();
    float acc = 0;
    for (size_t k = 0; k < n; ++k) acc += p[k];
    benchmark::DoNotOptimize(acc);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n * sizeof(float)));
}
BENCHMARK(BM_Memcpy1MiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sum1MiB)->Unit(benchmark::kMicrosecond);

// Time from an index file's rename into index/ to the step showing in Steps() of a reader
// blocked in WaitForChange. The "writer" publishes prepared steps (copies of a real step's
// event and index files) by rename, as TrialWriter does, and stamps the time of each rename.
struct Latency {
  double mean_ms = 0, p50_ms = 0, max_ms = 0;
  int samples = 0;
};

Latency FollowLatency(bool inotify, int samples) {
  namespace fs = std::filesystem;
  const std::string src = MegabyteTrial();
  const std::string dir = CacheDir() + "/follow_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir + "/collections/000000000");
  fs::copy(src + "/collections/000000000", dir + "/collections/000000000");
  const std::string ev0 = trial_format::EventFilePath(0, "worker_0");
  std::ifstream idx_in(src + "/" + trial_format::IndexFilePath(0, "worker_0"));
  const std::string index0((std::istreambuf_iterator<char>(idx_in)), {});
  TrialOptions o = BenchOptions();
  o.use_inotify = inotify;
  auto t = Trial::Open(dir, o);
  if (!t.ok()) {
    fprintf(stderr, "follow: %s\n", t.status().ToString().c_str());
    return {};
  }
  std::vector<Clock::time_point> published(samples);
  std::atomic<int> next{0};
  std::thread writer([&] {
    for (int s = 0; s < samples; ++s) {
      // Each step points at step 0's event file: only the index file matters for visibility.
      const std::string idx = dir + "/" + trial_format::IndexFilePath(s, "worker_0");
      fs::create_directories(fs::path(idx).parent_path());
      std::string text = index0;
      const std::string from = "\"mode_step\": 0";
      if (auto p = text.find(from); p != std::string::npos) {
        text.replace(p, from.size(), "\"mode_step\": " + std::to_string(s));
      }
      { std::ofstream(idx + ".tmp") << text; }
      while (next.load() < s) std::this_thread::sleep_for(std::chrono::microseconds(100));
      std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the reader is waiting now
      published[s] = Clock::now();
      fs::rename(idx + ".tmp", idx);
    }
  });
  std::vector<double> ms;
  for (int s = 0; s < samples; ++s) {
    next.store(s);
    for (;;) {
      (void)(*t)->WaitForChange(std::chrono::milliseconds(2000));
      const auto steps = (*t)->Steps();
      if (!steps.empty() && steps.back() >= s) break;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - published[s]).count());
  }
  writer.join();
  fs::remove_all(dir);
  std::sort(ms.begin(), ms.end());
  Latency l;
  l.samples = samples;
  for (double x : ms) l.mean_ms += x / samples;
  l.p50_ms = ms[ms.size() / 2];
  l.max_ms = ms.back();
  return l;
}

// Keeps every run for the summary table.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    // Keyed by the function name ("BM_X/min_time:2.000" -> "BM_X").
    for (const Run& r : runs) runs_[r.benchmark_name().substr(0, r.benchmark_name().find('/'))] = r;
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, Run> runs_;
};

void PrintSummary(const Collector& c, const Latency& ino, const Latency& poll) {
  auto ms = [&](const std::string& n) {
    auto it = c.runs_.find(n);
    return it == c.runs_.end() ? -1.0 : it->second.GetAdjustedRealTime();
  };
  auto gbs = [&](const std::string& n) {
    auto it = c.runs_.find(n);
    if (it == c.runs_.end()) return -1.0;
    auto b = it->second.counters.find("bytes_per_second");
    return b == it->second.counters.end() ? -1.0 : b->second.value / 1e9;
  };
  auto counter = [&](const std::string& n, const std::string& k) {
    auto it = c.runs_.find(n);
    if (it == c.runs_.end()) return -1.0;
    auto b = it->second.counters.find(k);
    return b == it->second.counters.end() ? -1.0 : b->second.value;
  };
  printf("\n%-52s %14s   %s\n", "measurement", "figure", "compare with");
  printf("%s\n", std::string(110, '-').c_str());
  printf("%-52s %11.1f ms   smdebug create_trial+tensor_names (bench/trial_open.py), goal >= 20x\n",
         "open + Steps + TensorNames, 10,000 x 50 (+reductions)", ms("BM_OpenListBigTrial"));
  printf("%-52s %11.1f MiB  (500k locations + 50k reductions)\n", "  index memory (RSS growth)",
         counter("BM_OpenListBigTrial", "index_rss_MiB"));
  if (!g_extra_trial.empty()) {
    printf("%-52s %11.1f ms   %s\n", "open + Steps + TensorNames, --trial",
           ms("BM_OpenListGivenTrial"), g_extra_trial.c_str());
  }
  printf("%-52s %11.2f GB/s zero-copy: no bytes move\n", "Value() of a 1 MiB tensor",
         gbs("BM_Value1MiB"));
  printf("%-52s %11.2f GB/s Sum over RAM: %.2f GB/s\n", "Value() + sum of its floats",
         gbs("BM_Value1MiBAndSum"), gbs("BM_Sum1MiB"));
  printf("%-52s %11.2f GB/s page-cache/RAM copy limit\n", "memcpy 1 MiB (64 MiB of sources)",
         gbs("BM_Memcpy1MiB"));
  printf("%-52s %8.2f/%.2f ms goal 100 ms (mean/max of %d)\n", "new step visible, inotify",
         ino.mean_ms, ino.max_ms, ino.samples);
  printf("%-52s %8.2f/%.2f ms polling period 20 ms (mean/max of %d)\n", "new step visible, polling",
         poll.mean_ms, poll.max_ms, poll.samples);
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  using namespace trainscope;  // NOLINT(build/namespaces)
  TrialShape shape;
  std::string make_dir;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const std::string f = std::string("--") + flag + "=";
      return a.rfind(f, 0) == 0 ? argv[i] + f.size() : nullptr;
    };
    if (const char* v = value("make_trial")) {
      make_dir = v;
    } else if (const char* v = value("steps")) {
      shape.steps = atoll(v);
    } else if (const char* v = value("tensors")) {
      shape.tensors = atoll(v);
    } else if (const char* v = value("elems")) {
      shape.elems = atoll(v);
    } else if (const char* v = value("trial")) {
      g_extra_trial = v;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (!make_dir.empty()) {
    const auto t0 = Clock::now();
    Status s = WriteBigTrial(make_dir, shape);
    if (!s.ok()) {
      fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    printf("wrote %s in %.1f s\n", make_dir.c_str(),
           std::chrono::duration<double>(Clock::now() - t0).count());
    return 0;
  }
  if (!g_extra_trial.empty()) {
    benchmark::RegisterBenchmark("BM_OpenListGivenTrial", BM_OpenListGivenTrial)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0);
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  BigTrial();
  MegabyteTrial();
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  const Latency ino = FollowLatency(true, 50);
  const Latency poll = FollowLatency(false, 20);
  PrintSummary(collector, ino, poll);
  return 0;
}
