// libFuzzer target: the stop signal, <trial>/rule-output/stop_training.json
// (docs/formats/stop_signal.md), over arbitrary bytes.
// - StopRequestFromJson never crashes; what it accepts survives StopRequestToJson and parses again
//   to the same request.
// - StopSignal::Read of a trial whose stop file holds the bytes always answers a request (a stop
//   file that is present means "stop", whatever it holds).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/env.h"
#include "trainscope/stop_signal.h"

using trainscope::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = trainscope::StopRequestFromJson(text);
  if (parsed.ok()) {
    auto again = trainscope::StopRequestFromJson(trainscope::StopRequestToJson(*parsed));
    Require(again.ok(), "StopRequestToJson's output does not parse");
    Require(again->source == parsed->source && again->rule == parsed->rule &&
                again->step == parsed->step && again->mode == parsed->mode &&
                again->explanation == parsed->explanation &&
                again->recommendation == parsed->recommendation && again->pid == parsed->pid &&
                again->host == parsed->host,
            "stop request changed in a round trip");
    (void)parsed->ToString();
  }
  static std::unique_ptr<trainscope::Env> env = trainscope::NewMemEnv();
  const std::string path = trainscope::StopSignal::PathFor("/t");
  trainscope::fuzz::PutFile(env.get(), path, text);
  trainscope::StopSignal signal("/t", env.get());
  Require(signal.Check(), "a present stop file does not stop");
  auto read = signal.Read();
  Require(read.ok(), "a present stop file gives no request");
  (void)read->ToString();
  return 0;
}
