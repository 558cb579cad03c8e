// libFuzzer target: framework timeline files, framework/pevents/<hour>/<end_us>_<node>_<suffix>
// (docs/formats/framework_profiling.md: Chrome trace-event JSON, possibly torn), over arbitrary
// bytes: the file parser, the reader's queries by time and by step over a trial in memory holding
// the bytes as a python timeline, and the strict trace check (ValidateTraceEvents). Never crashes;
// the reader's events come back sorted by start time.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/env.h"
#include "trainscope/metrics_reader.h"
#include "trainscope/profiler_format.h"
#include "trainscope/trace_merge.h"

using trainscope::fuzz::Require;
namespace pf = trainscope::profiler_format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  trainscope::ReaderStats stats;
  (void)trainscope::TimelineReader::ParseFile(text, "node-1", pf::kPythonTimelineSuffix,
                                              "fuzz.json", &stats);
  (void)trainscope::ValidateTraceEvents(text);

  auto env = trainscope::NewMemEnv();
  const std::string path =
      "/t/" + pf::TimelineFilePath(1704110412345678, "node-1", pf::kPythonTimelineSuffix);
  trainscope::fuzz::PutFile(env.get(), path, text);
  trainscope::TimelineReader reader(env.get(), "/t");
  (void)reader.Refresh();
  auto got = reader.GetEvents(trainscope::kTimeMin, trainscope::kTimeMax);
  if (got.ok()) {
    for (size_t i = 1; i < got->size(); ++i) {
      Require((*got)[i - 1].start_us <= (*got)[i].start_us, "events not sorted by start");
    }
  }
  (void)reader.GetStepTimeRange(0, 2);
  (void)reader.GetEventsByStep(1, 3);
  return 0;
}
