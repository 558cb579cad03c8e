// libFuzzer target: a rule's findings, rule-output/<Rule>/events.jsonl
// (docs/formats/rule_output.md), and the same finding as the actions take it (finding.h), over
// arbitrary bytes, line by line. RuleFindingFromJson and FindingFromJson never crash; what they
// accept survives their writer and parses again to the same finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "trainscope/finding.h"
#include "trainscope/rule.h"

using trainscope::fuzz::Require;

namespace {

bool SameNumber(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return (*a != *a && *b != *b) || *a == *b;  // NaN stays NaN
}

void OneLine(std::string_view line) {
  auto f = trainscope::RuleFindingFromJson(line);
  if (f.ok()) {
    auto again = trainscope::RuleFindingFromJson(trainscope::RuleFindingToJson(*f));
    Require(again.ok(), "RuleFindingToJson's output does not parse");
    Require(again->rule == f->rule && again->step == f->step && again->mode == f->mode &&
                again->mode_step == f->mode_step && again->tensor == f->tensor &&
                SameNumber(again->value, f->value) && SameNumber(again->threshold, f->threshold) &&
                again->explanation == f->explanation && again->stop_training == f->stop_training,
            "rule finding changed in a round trip");
  }
  auto g = trainscope::FindingFromJson(line);
  if (g.ok()) {
    auto again = trainscope::FindingFromJson(trainscope::FindingToJson(*g));
    Require(again.ok(), "FindingToJson's output does not parse");
    Require(again->kind == g->kind && again->rule == g->rule && again->status == g->status &&
                again->step == g->step && again->mode == g->mode && again->tensor == g->tensor &&
                SameNumber(again->value, g->value) && SameNumber(again->threshold, g->threshold) &&
                again->explanation == g->explanation,
            "finding changed in a round trip");
  }
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
