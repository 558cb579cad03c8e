// Training modes, as smdebug numbers and names them (smdebug/core/modes.py).
#pragma once

#include <optional>
#include <string_view>

namespace trainscope {

enum class Mode : int { kTrain = 1, kEval = 2, kPredict = 3, kGlobal = 4 };

inline constexpr Mode kAllModes[] = {Mode::kTrain, Mode::kEval, Mode::kPredict, Mode::kGlobal};

// "TRAIN", "EVAL", "PREDICT", "GLOBAL".
std::string_view ModeName(Mode m);
// Accepts "TRAIN" and "ModeKeys.TRAIN" (any case) and the numbers "1".."4".
std::optional<Mode> ModeFromName(std::string_view name);

}  // namespace trainscope
