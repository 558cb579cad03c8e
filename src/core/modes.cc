#include "trainscope/modes.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace trainscope {

std::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kTrain:
      return "TRAIN";
    case Mode::kEval:
      return "EVAL";
    case Mode::kPredict:
      return "PREDICT";
    case Mode::kGlobal:
      return "GLOBAL";
  }
  return "GLOBAL";
}

std::optional<Mode> ModeFromName(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  if (s.rfind("MODEKEYS.", 0) == 0) s = s.substr(9);
  if (s == "TRAIN" || s == "1") return Mode::kTrain;
  if (s == "EVAL" || s == "2") return Mode::kEval;
  if (s == "PREDICT" || s == "3") return Mode::kPredict;
  if (s == "GLOBAL" || s == "4") return Mode::kGlobal;
  return std::nullopt;
}

}  // namespace trainscope
