// libFuzzer target: the hook configuration JSON (smdebug's schema; hook_config.h) over arbitrary
// bytes. ParseHookConfigJson never crashes (no uncaught JSON type error, no abort on a huge or
// negative number); every failure is a Status naming the source.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/hook_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = trainscope::ParseHookConfigJson(text, "fuzz_hook_config.json");
  if (!config.ok()) {
    trainscope::fuzz::Require(
        config.status().ToString().find("fuzz_hook_config.json") != std::string::npos,
        "a hook configuration error does not name the file");
  }
  return 0;
}
