// Cost of TimelineWriter::Record on the training thread (what a hook pays per event) and of the
// background serialisation. Goal: Record well under 1 us, so ten events per step cost < 0.1% of a
// 10 ms step. Files go to a temporary folder on the real disk.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "trainscope/step_timeline.h"
#include "trainscope/timeline.h"

namespace {

std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ts_timeline_bench_XXXXXX").string();
  return mkdtemp(tmpl.data()) ? tmpl : "/tmp";
}

// A writer into `dir` with node id "bench"; flush_interval_millis 0: no background thread.
std::unique_ptr<trainscope::TimelineWriter> OpenWriter(const std::string& dir,
                                                       int64_t flush_interval_millis) {
  trainscope::TimelineWriterOptions o;
  o.node_id = "bench";
  o.flush_interval_millis = flush_interval_millis;
  return std::move(trainscope::TimelineWriter::Create(trainscope::Env::Default(), dir, o)).value();
}

void BM_Record(benchmark::State& state) {
  std::string dir = MakeTempDir();
  {
    auto w = OpenWriter(dir, state.range(0));
    uint64_t t = w->NowMicros();
    int64_t step = 0;
    for (auto _ : state) {
      w->Record("Step:ModeKeys.TRAIN", "Step", t, 1000, {{"step_num", step++}});
      t += 1000;
    }
    if (trainscope::Status s = w->Close(); !s.ok()) state.SkipWithError(s.ToString().c_str());
    state.counters["written"] = static_cast<double>(w->events_written());
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
// 0: no background thread (buffer only: the pure Record cost); 100: flushing every 100 ms.
BENCHMARK(BM_Record)->Arg(0)->Arg(100)->Iterations(1000000);

void BM_FlushSerialise(benchmark::State& state) {
  std::string dir = MakeTempDir();
  auto w = OpenWriter(dir, 0);
  uint64_t t = w->NowMicros();
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < 1000; ++i) {
      w->Record("Forward", "module.layer", t, 100, {{"step_num", i}, {"pid", 42}});
      t += 100;
    }
    state.ResumeTiming();
    if (trainscope::Status s = w->Flush(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  if (trainscope::Status s = w->Close(); !s.ok()) state.SkipWithError(s.ToString().c_str());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_FlushSerialise)->Unit(benchmark::kMicrosecond);

// A step boundary's Step span as the hook makes it (StepTimeline::Begin: the span that ends into
// the batch, a batch to the writer every 64 steps, kept spans for get_profiler_data()) with the
// writer's thread flushing every 100 ms: the process's CPU time per step, both threads. What the
// framework profile costs a quiet step of a short-step training (bench/step_anatomy.py's MLP:
// about 320 us a step on an idle machine here). Arg: spans kept (0, or the recorder's 200000).
void BM_StepSpan(benchmark::State& state) {
  std::string dir = MakeTempDir();
  {
    auto w = OpenWriter(dir, 100);
    trainscope::StepTimeline steps(w.get(), 42, /*phase_period_us=*/0,
                                   static_cast<size_t>(state.range(0)));
    int64_t step = 0;
    for (auto _ : state) {
      benchmark::DoNotOptimize(steps.Begin(steps.Now(), trainscope::Mode::kTrain, step, step,
                                           step % 50 == 0, step % 3 == 0 ? 7 : 0));
      ++step;
    }
    steps.End(steps.Now());
    if (trainscope::Status s = w->Close(); !s.ok()) state.SkipWithError(s.ToString().c_str());
    state.counters["written"] = static_cast<double>(w->events_written());
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_StepSpan)->Arg(0)->Arg(200000)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
