// libFuzzer target: a rule's findings, rule-output/<Rule>/events.jsonl
// (docs/formats/rule_output.md), and the same finding as the actions take it (finding.h, the
// findings' one codec), over arbitrary bytes, line by line. RuleFindingFromJson and
// RuleFindingFromEventsLine never crash; what they accept survives the writer (every key, and the
// actions' keys) and parses again to the same finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/finding.h"

using trainscope::fuzz::Require;

namespace {

bool SameNumber(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return (*a != *a && *b != *b) || *a == *b;  // NaN stays NaN
}

// The keys both key sets write.
bool SameActionKeys(const trainscope::RuleFinding& a, const trainscope::RuleFinding& b) {
  return a.kind == b.kind && a.rule == b.rule && a.status == b.status && a.step == b.step &&
         a.mode == b.mode && a.tensor == b.tensor && SameNumber(a.value, b.value) &&
         SameNumber(a.threshold, b.threshold) && a.explanation == b.explanation &&
         a.recommendation == b.recommendation && a.time_micros == b.time_micros;
}

void RoundTrip(const trainscope::Result<trainscope::RuleFinding>& f) {
  if (!f.ok()) return;
  auto again = trainscope::RuleFindingFromJson(trainscope::RuleFindingToJson(*f));
  Require(again.ok(), "RuleFindingToJson's output does not parse");
  Require(SameActionKeys(*again, *f) && again->mode_step == f->mode_step &&
              again->condition == f->condition && again->trial == f->trial &&
              again->stop_training == f->stop_training,
          "rule finding changed in a round trip");
  auto actions = trainscope::RuleFindingFromJson(
      trainscope::RuleFindingToJson(*f, trainscope::FindingKeys::kActions));
  Require(actions.ok(), "RuleFindingToJson's actions output does not parse");
  Require(SameActionKeys(*actions, *f), "finding changed in a round trip of the actions' keys");
}

void OneLine(std::string_view line) {
  RoundTrip(trainscope::RuleFindingFromJson(line));
  RoundTrip(trainscope::RuleFindingFromEventsLine(line, "LossNotDecreasing"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  int lines = 0;
  while (!text.empty() && lines++ < 64) {
    const size_t nl = text.find('\n');
    OneLine(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return 0;
}
