// libFuzzer target: the event log, rule-output/events.log.jsonl (docs/formats/event_log.md), read
// as `trainscope run` and the dashboard follow it: ReadEvents from offset 0 until it stops
// advancing. Never crashes; the offset only moves forward and never past the end; an error is a
// Status naming the offset.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "trainscope/env.h"
#include "trainscope/event_log.h"

using trainscope::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static std::unique_ptr<trainscope::Env> env = trainscope::NewMemEnv();
  const std::string path = "/t/rule-output/events.log.jsonl";
  trainscope::fuzz::PutFile(env.get(), path, text);
  uint64_t offset = 0;
  std::vector<trainscope::LoggedEvent> events;
  for (int calls = 0; calls < 8; ++calls) {
    const uint64_t before = offset;
    trainscope::Status s = trainscope::ReadEvents(env.get(), path, &offset, &events);
    Require(offset >= before && offset <= size, "ReadEvents moved its offset out of the file");
    if (!s.ok()) {
      Require(s.ToString().find("offset") != std::string::npos ||
                  s.ToString().find("byte") != std::string::npos,
              "an event log error names no offset");
      break;
    }
    if (offset == before) break;
  }
  return 0;
}
