// libFuzzer target: collections files, collections/<step>/<worker>_collections.json
// (docs/formats/trial.md), over arbitrary bytes. ParseCollectionsFile never crashes; every failure
// is a Status naming the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "store/collections_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = trainscope::ParseCollectionsFile(text, "worker_0_collections.json");
  if (!parsed.ok()) {
    trainscope::fuzz::Require(
        parsed.status().ToString().find("worker_0_collections.json") != std::string::npos,
        "a collections error does not name the file");
  }
  return 0;
}
