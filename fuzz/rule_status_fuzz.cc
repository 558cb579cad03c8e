// libFuzzer target: a rule's status file, rule-output/<Rule>/status.json
// (docs/formats/rule_output.md), over arbitrary bytes. RuleStateFromJson never crashes (no
// uncaught JSON type error); what it accepts survives RuleStateToJson and parses again to the
// same state.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/rule_runner.h"

using trainscope::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto state = trainscope::RuleStateFromJson(text);
  if (!state.ok()) return 0;
  auto again = trainscope::RuleStateFromJson(trainscope::RuleStateToJson(*state, "/t", 1));
  Require(again.ok(), "RuleStateToJson's output does not parse");
  Require(
      again->rule == state->rule && again->status == state->status &&
          again->message == state->message && again->steps_evaluated == state->steps_evaluated &&
          again->steps_skipped == state->steps_skipped && again->last_step == state->last_step &&
          again->findings == state->findings && again->suppressed == state->suppressed &&
          again->first_finding_step == state->first_finding_step &&
          again->finished == state->finished,
      "rule state changed in a round trip");
  return 0;
}
