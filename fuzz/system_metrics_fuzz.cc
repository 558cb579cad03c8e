// libFuzzer target: system metrics files, system/incremental/<hour>/<minute>.algo-<n>.json
// (docs/formats/system_metrics.md), over arbitrary bytes: the line parser alone, then the reader
// over a trial in memory whose one system file holds the bytes. Never crashes; bad lines are
// skipped and counted; events come back sorted by time.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/env.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/profiler_format.h"

using trainscope::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  trainscope::ReaderStats stats;
  auto events = trainscope::SystemMetricsReader::ParseFile(text, "fuzz.json", &stats);
  Require(stats.lines_skipped >= 0 && stats.problems.size() <= 20, "reader stats out of range");

  auto env = trainscope::NewMemEnv();
  const std::string path =
      "/t/" + trainscope::profiler_format::SystemMetricsFilePath(1704110400, 1);
  trainscope::fuzz::PutFile(env.get(), path, text);
  trainscope::SystemMetricsReader reader(env.get(), "/t");
  (void)reader.Refresh();
  auto got = reader.GetEvents(trainscope::kTimeMin, trainscope::kTimeMax);
  if (got.ok()) {
    for (size_t i = 1; i < got->size(); ++i) {
      Require((*got)[i - 1].timestamp_us <= (*got)[i].timestamp_us, "events not sorted by time");
    }
  }
  trainscope::SystemMetricsQuery q;
  q.type = "cpu";
  (void)reader.GetEvents(0, 1795636320000000, q);
  (void)reader.FirstTimestampMicros();
  (void)reader.LatestTimestampMicros();
  return 0;
}
