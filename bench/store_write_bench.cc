// Write throughput of TrialWriter against the limits it chases: a raw sequential write() of the
// same bytes into one file in the same folder (same sync policy), and memcpy.
//
// Each trainscope iteration writes `steps` steps of `per_step` tensors of `size` bytes each
// through one long-lived TrialWriter and Flush()es it (which drains the queue). The raw iteration writes the same bytes with one write() per tensor into one file and
// closes it. Files are written to a temporary folder beside the binary (same file system as the
// build; TRAINSCOPE_BENCH_DIR overrides) and removed after each case: deleting between
// iterations made ext4's inode allocator (recently_deleted) dominate file creation.
// TRAINSCOPE_BENCH_SYNC=1 makes both sides fdatasync (trainscope: WriterOptions::sync).
//
// At the end a table compares trainscope with raw write() (goal: ratio >= 0.8).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "trainscope/writer.h"

namespace trainscope {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool SyncWanted() {
  const char* s = std::getenv("TRAINSCOPE_BENCH_SYNC");
  return s != nullptr && std::string(s) == "1";
}

const std::string& BenchRoot() {
  static const std::string root = [] {
    std::string base;
    if (const char* d = std::getenv("TRAINSCOPE_BENCH_DIR")) {
      base = d;
    } else {
      std::error_code ec;
      base = fs::read_symlink("/proc/self/exe", ec).parent_path().string();
      if (ec || base.empty()) base = ".";
    }
    std::string tmpl = base + "/store_write_bench_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    return tmpl;
  }();
  return root;
}

// Source bytes, shared by all cases (the largest case is 256 MiB).
const std::vector<char>& Source(size_t n) {
  static std::vector<char> buf;
  if (buf.size() < n) {
    buf.resize(n);
    for (size_t i = 0; i < n; ++i) buf[i] = static_cast<char>(i * 131 + (i >> 12));
  }
  return buf;
}

struct Case {
  const char* label;
  size_t size;      // bytes per tensor
  int per_step;     // tensors per step
  int steps;        // steps per iteration
};

// label -> measured rates (bytes/s)
struct Rates {
  double trainscope = 0, raw = 0, memcpy_ = 0;
  double trainscope_cpu = 0, raw_cpu = 0;  // process CPU seconds (all threads) per byte
  Case c{};
};
std::map<std::string, Rates>& Results() {
  static std::map<std::string, Rates> r;
  return r;
}

// CPU seconds (user + system) used by the whole process so far, all threads.
double ProcessCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

void Record(benchmark::State& state, const Case& c, double bytes, double seconds,
            double Rates::*field) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  Rates& r = Results()[c.label];
  r.c = c;
  r.*field = seconds > 0 ? bytes / seconds : 0;
}

// One long-lived writer, as in a training run (its buffers are reused from step to step); each
// iteration writes `steps` new steps and Flush()es, so the time covers the bytes reaching the
// file system. One untimed iteration first warms the buffers up.
void BM_TrialWriter(benchmark::State& state, Case c) {
  const std::vector<char>& src = Source(c.size * static_cast<size_t>(c.per_step));
  double bytes = 0, seconds = 0;
  std::vector<std::string> names;
  for (int k = 0; k < c.per_step; ++k) names.push_back("layer" + std::to_string(k) + ".weight");
  const std::string dir = BenchRoot() + "/trial";
  WriterOptions opts;
  opts.sync = SyncWanted();
  opts.write_end_marker = false;
  auto w = TrialWriter::Open(dir, opts);
  if (!w.ok()) {
    state.SkipWithError(w.status().ToString().c_str());
    return;
  }
  int64_t step = 0;
  auto write_steps = [&]() {
    for (int s = 0; s < c.steps; ++s, ++step) {
      (void)(*w)->BeginStep(step, Mode::kTrain, step);
      for (int k = 0; k < c.per_step; ++k) {
        TensorView v{DType::kF32, src.data() + k * c.size,
                     {static_cast<int64_t>(c.size / 4)}, {}, {}};
        (void)(*w)->AddTensor(names[k], v);
      }
      (void)(*w)->EndStep();
    }
    return (*w)->Flush();
  };
  Status st = write_steps();  // warm-up
  double cpu = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const double c0 = ProcessCpuSeconds();
    st = write_steps();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    cpu += ProcessCpuSeconds() - c0;
    if (!st.ok()) {
      state.SkipWithError(st.ToString().c_str());
      break;
    }
    state.SetIterationTime(dt);
    seconds += dt;
    bytes += static_cast<double>(c.size) * c.per_step * c.steps;
  }
  (void)(*w)->Close();
  w->reset();
  fs::remove_all(dir);
  Record(state, c, bytes, seconds, &Rates::trainscope);
  Results()[c.label].trainscope_cpu = bytes > 0 ? cpu / bytes : 0;
}

void BM_RawWrite(benchmark::State& state, Case c) {
  const std::vector<char>& src = Source(c.size * static_cast<size_t>(c.per_step));
  double bytes = 0, seconds = 0;
  double cpu = 0;
  int run = 0;
  for (auto _ : state) {
    const std::string path = BenchRoot() + "/raw" + std::to_string(run++) + ".bin";
    const auto t0 = Clock::now();
    const double c0 = ProcessCpuSeconds();
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      state.SkipWithError("open failed");
      break;
    }
    for (int s = 0; s < c.steps; ++s) {
      for (int k = 0; k < c.per_step; ++k) {
        const char* p = src.data() + k * c.size;
        size_t n = c.size;
        while (n > 0) {
          ssize_t w = ::write(fd, p, n);
          if (w <= 0) {
            state.SkipWithError("write failed");
            ::close(fd);
            return;
          }
          p += w;
          n -= static_cast<size_t>(w);
        }
      }
    }
    if (SyncWanted()) ::fdatasync(fd);
    ::close(fd);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    cpu += ProcessCpuSeconds() - c0;
    state.SetIterationTime(dt);
    seconds += dt;
    bytes += static_cast<double>(c.size) * c.per_step * c.steps;
  }
  for (int i = 0; i < run; ++i) {
    ::unlink((BenchRoot() + "/raw" + std::to_string(i) + ".bin").c_str());
  }
  Record(state, c, bytes, seconds, &Rates::raw);
  Results()[c.label].raw_cpu = bytes > 0 ? cpu / bytes : 0;
}

void BM_Memcpy(benchmark::State& state, Case c) {
  const size_t n = c.size * static_cast<size_t>(c.per_step);
  const std::vector<char>& src = Source(n);
  std::vector<char> dst(n);
  double bytes = 0, seconds = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    for (int s = 0; s < c.steps; ++s) {
      std::memcpy(dst.data(), src.data(), n);
      benchmark::DoNotOptimize(dst.data());
      benchmark::ClobberMemory();
    }
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(dt);
    seconds += dt;
    bytes += static_cast<double>(n) * c.steps;
  }
  Record(state, c, bytes, seconds, &Rates::memcpy_);
}

const Case kCases[] = {
    {"4 KB x 256 per step", 4096, 256, 32},    // 32 MiB per iteration
    {"4 KB x 1 per step", 4096, 1, 256},       // bound by the per-step files (see the table)
    {"1 MB x 1 per step", 1 << 20, 1, 32},
    {"1 MB x 16 per step", 1 << 20, 16, 4},
    {"256 MB x 1 per step", 256u << 20, 1, 2},
};

void RegisterAll() {
  for (const Case& c : kCases) {
    const int iters = 3;
    benchmark::RegisterBenchmark(("trainscope/" + std::string(c.label)).c_str(), BM_TrialWriter, c)
        ->UseManualTime()
        ->Iterations(iters)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("raw_write/" + std::string(c.label)).c_str(), BM_RawWrite, c)
        ->UseManualTime()
        ->Iterations(iters)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("memcpy/" + std::string(c.label)).c_str(), BM_Memcpy, c)
        ->UseManualTime()
        ->Iterations(iters)
        ->Unit(benchmark::kMillisecond);
  }
}

void PrintTable() {
  char load[64] = "?";
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fgets(load, sizeof(load), f) == nullptr) load[0] = 0;
    std::fclose(f);
  }
  std::printf("\nTrialWriter throughput vs raw sequential write() (sync=%s), folder %s\n"
              "load average now: %s",
              SyncWanted() ? "on" : "off", BenchRoot().c_str(), load);
  std::printf("%-22s | %15s | %10s | %6s | %11s | %11s | %s\n", "size", "trainscope MB/s",
              "raw MB/s", "ratio", "goal", "memcpy MB/s", "CPU ms per 100 MB (trainscope / raw)");
  std::printf("%s\n", std::string(125, '-').c_str());
  for (const Case& c : kCases) {
    auto it = Results().find(c.label);
    if (it == Results().end()) continue;
    const Rates& r = it->second;
    const double ratio = r.raw > 0 ? r.trainscope / r.raw : 0;
    std::printf("%-22s | %15.0f | %10.0f | %6.2f | %11s | %11.0f | %.0f / %.0f\n", c.label,
                r.trainscope / 1e6, r.raw / 1e6, ratio, ratio >= 0.8 ? ">= 0.8 ok" : ">= 0.8 MISS",
                r.memcpy_ / 1e6, r.trainscope_cpu * 1e8 * 1e3, r.raw_cpu * 1e8 * 1e3);
  }
  // A step costs two new files, a new folder and two renames (smdebug's layout): with one small
  // tensor per step that, not the bytes, sets the pace.
  auto small = Results().find("4 KB x 1 per step");
  if (small != Results().end() && small->second.trainscope > 0) {
    const double step_s = 4096.0 / small->second.trainscope;
    const double raw_s = small->second.raw > 0 ? 4096.0 / small->second.raw : 0;
    std::printf("time per step with one 4 KB tensor: %.0f us (raw write of 4 KB: %.1f us); the "
                "difference is the per-step file creation smdebug's layout requires\n",
                step_s * 1e6, raw_s * 1e6);
  }
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  trainscope::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  trainscope::PrintTable();
  benchmark::Shutdown();
  std::filesystem::remove_all(trainscope::BenchRoot());
  return 0;
}
