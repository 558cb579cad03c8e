// libFuzzer target: the profiler configuration JSON (smdebug's schema; profiler_config.h) over
// arbitrary bytes. ParseProfilerConfig never crashes; every failure is a Status naming the source.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/profiler_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = trainscope::ParseProfilerConfig(text, "fuzz_profiler_config.json");
  if (!config.ok()) {
    trainscope::fuzz::Require(
        config.status().ToString().find("fuzz_profiler_config.json") != std::string::npos,
        "a profiler configuration error does not name the file");
  }
  return 0;
}
