// libFuzzer target: `trainscope timeline`'s merger (trace_merge.h) over a trial in memory whose
// inputs come from the fuzz input, cut into parts (fuzz_util.h): a system metrics file, a python
// timeline file, a torch.profiler trace (framework/pytorch/detailed_profiling) and a rule's
// events.jsonl. Whatever the inputs, MergeTimeline never crashes, succeeds (unreadable inputs are
// warnings), and its output passes the strict trace check (ValidateTraceEvents).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/env.h"
#include "trainscope/profiler_format.h"
#include "trainscope/rule_output_format.h"
#include "trainscope/trace_merge.h"

using trainscope::fuzz::Require;
namespace pf = trainscope::profiler_format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts =
      trainscope::fuzz::SplitParts(std::string_view(reinterpret_cast<const char*>(data), size), 4);
  auto env = trainscope::NewMemEnv();
  const std::string t = "/t/";
  auto put = [&](const std::string& path, std::string_view text) {
    if (text.empty()) return;  // an absent input
    trainscope::fuzz::PutFile(env.get(), t + path, text);
  };
  put(pf::SystemMetricsFilePath(1704110400, 1), parts[0]);
  put(pf::TimelineFilePath(1704110412345678, "node-1", pf::kPythonTimelineSuffix), parts[1]);
  put(std::string(pf::kPytorchDetailedProfilingDir) + "/node-1/trace.json", parts[2]);
  put(std::string(trainscope::rule_output_format::kRuleOutputDir) + "/LossNotDecreasing/" +
          std::string(trainscope::rule_output_format::kEventsFile),
      parts[3]);
  auto merged = trainscope::MergeTimeline(env.get(), "/t", "/out/trace.json");
  Require(merged.ok(), "MergeTimeline failed on readable inputs");
  auto out = env->ReadFile("/out/trace.json");
  Require(out.ok(), "the merged trace was not written");
  auto valid = trainscope::ValidateTraceEvents(*out);
  if (!valid.ok()) {
    fprintf(stderr, "%s\n", valid.ToString().c_str());
    trainscope::fuzz::Violated("the merged trace is not a valid Chrome trace");
  }
  return 0;
}
