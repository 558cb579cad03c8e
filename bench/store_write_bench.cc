// Write throughput of TrialWriter against the limits it chases: a raw sequential write() of the
// same bytes into one file in the same folder (same sync policy), and memcpy.
//
// Per case, each iteration times both sides back to back on the same bytes (see BM_WritePair):
// trainscope writes `steps` steps of `per_step` tensors of `size` bytes through one long-lived
// TrialWriter and Flush()es it (which drains the queue); raw writes the same bytes with one
// write() per tensor into one new file and closes it. Files go to a temporary folder beside the
// binary (same file system as the build; TRAINSCOPE_BENCH_DIR overrides); the trial is removed
// after each case (deleting it between iterations made ext4's inode allocator, recently_deleted,
// dominate file creation). TRAINSCOPE_BENCH_SYNC=1 makes both sides fdatasync
// (trainscope: WriterOptions::sync).
//
// Noise, and what is done about it:
// - Before every timed side the machine's dirty pages are written back (sync(), not timed), or
//   whichever side runs after a large case pays for its writeback.
// - On the VMs this project runs on, the first touch of a page of guest memory the VM has not
//   used since it started costs a host page fault: a 256 MB write() from C measured 3 GB/s, then
//   0.25 GB/s seconds later, once the kernel had run out of already-touched free pages for the
//   page cache. So the benchmark first touches and frees TRAINSCOPE_BENCH_WARM_MB of memory
//   (default 4096, 0 to skip; the time it took is printed), and after each iteration of 64 MiB
//   or more drops the written files' pages from the page cache (sync, then fadvise DONTNEED;
//   raw files are unlinked), so both sides keep writing into pages touched before.
// - Each step costs two new files and a new folder (smdebug's layout), which raw write() does
//   not pay: on the development VM's much-churned ext4 that was 0.7-2.4 ms per step (a C loop
//   of the same calls; perf: ext4's inode allocator scanning past recently deleted inodes,
//   recently_deleted + find_get_block_common, in system CPU), 0.2 ms on a new ext4 (a loop
//   mount), 52 us on tmpfs. TRAINSCOPE_BENCH_DIR points the benchmark at another file system:
//   /dev/shm measures the writer without metadata costs; a new ext4 without the churn:
//     truncate -s 6G /tmp/ext4.img && mkfs.ext4 -q -F /tmp/ext4.img &&
//     mkdir -p /mnt/fresh && mount -o loop /tmp/ext4.img /mnt/fresh
//   The per-step rows (one tensor per step) show that per-step cost; the goal (>= 0.8) is for
//   the rows that write many bytes per step, as training does.
// - The two sides alternate within each iteration and the table gives the median of the
//   per-iteration ratios. TRAINSCOPE_BENCH_ITERS sets the iterations per case (7).
//
// At the end a table compares trainscope with raw write() (goal: ratio >= 0.8).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
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

// Touches and frees `mb` MiB of memory, so that the page cache of the benchmark's files gets
// pages the VM has touched before (see the top of the file). Returns the seconds it took.
double WarmFreeMemory() {
  size_t mb = 4096;
  if (const char* e = std::getenv("TRAINSCOPE_BENCH_WARM_MB")) mb = std::strtoull(e, nullptr, 10);
  const auto t0 = Clock::now();
  std::vector<std::unique_ptr<char[]>> held;  // all touched before any is freed and reused
  for (size_t done = 0; done < mb; done += 256) {
    const size_t n = std::min<size_t>(256, mb - done) << 20;
    std::unique_ptr<char[]> p(new (std::nothrow) char[n]);
    if (!p) break;
    std::memset(p.get(), 1, n);
    benchmark::DoNotOptimize(p.get());
    held.push_back(std::move(p));
  }
  held.clear();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Drops the page-cache pages of every file under `dir` (written back first).
void DropCachedPages(const std::string& dir) {
  ::sync();
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

struct Case {
  const char* label;
  size_t size;   // bytes per tensor
  int per_step;  // tensors per step
  int steps;     // steps per iteration
  bool goal;     // a row of the goal (>= 0.8); the others show the per-step cost
};

// label -> measured rates (bytes/s), medians over iterations
struct Rates {
  double trainscope = 0, raw = 0, memcpy_ = 0;
  double ratio = 0;                        // median of the per-iteration ratios
  double trainscope_cpu = 0, raw_cpu = 0;  // process CPU seconds (all threads) per byte
  Case c{};
};
std::map<std::string, Rates>& Results() {
  static std::map<std::string, Rates> r;
  return r;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// CPU seconds (user + system) used by the whole process so far, all threads.
double ProcessCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// Wall and CPU seconds of one side's iteration.
struct Timing {
  double wall = 0, cpu = 0;
};
template <typename F>
Timing Timed(F&& f) {
  ::sync();  // start from no dirty pages (see the top of the file)
  const auto t0 = Clock::now();
  const double c0 = ProcessCpuSeconds();
  f();
  return {std::chrono::duration<double>(Clock::now() - t0).count(), ProcessCpuSeconds() - c0};
}

// The raw side: one new file per iteration, one write() per tensor.
bool RawWriteOnce(const Case& c, const std::vector<char>& src, const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  for (int s = 0; s < c.steps; ++s) {
    for (int k = 0; k < c.per_step; ++k) {
      const char* p = src.data() + k * c.size;
      size_t n = c.size;
      while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w <= 0) {
          ::close(fd);
          return false;
        }
        p += w;
        n -= static_cast<size_t>(w);
      }
    }
  }
  if (SyncWanted()) ::fdatasync(fd);
  ::close(fd);
  return true;
}

// Each iteration times both sides on the same bytes, back to back, alternating which goes first:
// the machine's state (page cache, writeback, neighbours) drifts over seconds, and the ratio of
// two runs seconds apart is far steadier than the ratio of two separate benchmarks.
//
// The trainscope side uses one long-lived writer, as in a training run (its buffers are reused
// from step to step); each iteration writes `steps` new steps and Flush()es, so the time covers
// the bytes reaching the file system. One untimed iteration first warms the buffers up.
void BM_WritePair(benchmark::State& state, Case c) {
  const std::vector<char>& src = Source(c.size * static_cast<size_t>(c.per_step));
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
        TensorView v{
            DType::kF32, src.data() + k * c.size, {static_cast<int64_t>(c.size / 4)}, {}, {}};
        (void)(*w)->AddTensor(names[k], v);
      }
      (void)(*w)->EndStep();
    }
    return (*w)->Flush();
  };
  Status st = write_steps();  // warm-up
  const double bytes = static_cast<double>(c.size) * c.per_step * c.steps;
  std::vector<double> ts_rate, raw_rate, ratio, ts_cpu, raw_cpu;
  int run = 0;
  for (auto _ : state) {
    Timing ts, raw;
    bool raw_ok = true;
    const std::string path = BenchRoot() + "/raw" + std::to_string(run) + ".bin";
    auto do_raw = [&] { raw = Timed([&] { raw_ok = RawWriteOnce(c, src, path); }); };
    auto do_ts = [&] { ts = Timed([&] { st = write_steps(); }); };
    if (run++ % 2 == 0) {
      do_raw();
      do_ts();
    } else {
      do_ts();
      do_raw();
    }
    ::unlink(path.c_str());
    // Only where the pages add up (small cases: dropping thousands of files' pages slowed the
    // next iteration's file creation).
    if (bytes >= 64.0 * (1 << 20)) DropCachedPages(dir);
    if (!st.ok() || !raw_ok) {
      state.SkipWithError(st.ok() ? "raw write failed" : st.ToString().c_str());
      break;
    }
    state.SetIterationTime(ts.wall);
    ts_rate.push_back(bytes / ts.wall);
    raw_rate.push_back(bytes / raw.wall);
    ratio.push_back(raw.wall / ts.wall);
    ts_cpu.push_back(ts.cpu / bytes);
    raw_cpu.push_back(raw.cpu / bytes);
  }
  (void)(*w)->Close();
  w->reset();
  fs::remove_all(dir);
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(ts_rate.size())));
  Rates& r = Results()[c.label];
  r.c = c;
  r.trainscope = Median(ts_rate);
  r.raw = Median(raw_rate);
  r.ratio = Median(ratio);
  r.trainscope_cpu = Median(ts_cpu);
  r.raw_cpu = Median(raw_cpu);
  state.counters["ratio_vs_raw"] = r.ratio;
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
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  Results()[c.label].memcpy_ = seconds > 0 ? bytes / seconds : 0;
}

const Case kCases[] = {
    {"4 KB x 256 per step", 4096, 256, 32, true},  // 32 MiB per iteration
    {"4 KB x 1 per step", 4096, 1, 256, false},    // bound by the per-step files (see the table)
    {"1 MB x 1 per step", 1 << 20, 1, 32, false},
    {"1 MB x 16 per step", 1 << 20, 16, 16, true},  // 256 MiB per iteration
    {"256 MB x 1 per step", 256u << 20, 1, 2, true},
};

void RegisterAll() {
  int iters = 7;
  if (const char* e = std::getenv("TRAINSCOPE_BENCH_ITERS")) iters = std::max(1, std::atoi(e));
  for (const Case& c : kCases) {
    benchmark::RegisterBenchmark(("trainscope_vs_raw/" + std::string(c.label)).c_str(),
                                 BM_WritePair, c)
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
  std::printf(
      "\nTrialWriter throughput vs raw sequential write() (sync=%s), folder %s\n"
      "load average now: %s",
      SyncWanted() ? "on" : "off", BenchRoot().c_str(), load);
  std::printf("%-22s | %15s | %10s | %6s | %11s | %11s | %s\n", "size", "trainscope MB/s",
              "raw MB/s", "ratio", "goal", "memcpy MB/s", "CPU ms per 100 MB (trainscope / raw)");
  std::printf("%s\n", std::string(125, '-').c_str());
  for (const Case& c : kCases) {
    auto it = Results().find(c.label);
    if (it == Results().end()) continue;
    const Rates& r = it->second;
    const double ratio = r.ratio;
    const char* verdict = !c.goal ? "step cost" : ratio >= 0.8 ? ">= 0.8 ok" : ">= 0.8 MISS";
    std::printf("%-22s | %15.0f | %10.0f | %6.2f | %11s | %11.0f | %.0f / %.0f\n", c.label,
                r.trainscope / 1e6, r.raw / 1e6, ratio, verdict, r.memcpy_ / 1e6,
                r.trainscope_cpu * 1e8 * 1e3, r.raw_cpu * 1e8 * 1e3);
  }
  // A step costs two new files, a new folder and two renames (smdebug's layout): with one small
  // tensor per step that, not the bytes, sets the pace.
  auto small = Results().find("4 KB x 1 per step");
  if (small != Results().end() && small->second.trainscope > 0) {
    const double step_s = 4096.0 / small->second.trainscope;
    const double raw_s = small->second.raw > 0 ? 4096.0 / small->second.raw : 0;
    std::printf(
        "time per step with one 4 KB tensor: %.0f us (raw write of 4 KB: %.1f us); the "
        "difference is the per-step file creation smdebug's layout requires\n",
        step_s * 1e6, raw_s * 1e6);
  }
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const double warm_s = trainscope::WarmFreeMemory();
  std::printf("touched and freed TRAINSCOPE_BENCH_WARM_MB of memory first: %.1f s\n", warm_s);
  trainscope::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  trainscope::PrintTable();
  benchmark::Shutdown();
  std::filesystem::remove_all(trainscope::BenchRoot());
  return 0;
}
