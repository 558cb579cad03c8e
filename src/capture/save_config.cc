#include "trainscope/save_config.h"

#include <algorithm>

namespace trainscope {

bool SaveConfigMode::ShouldSave(int64_t mode_step) const {
  if (!save_steps.empty() &&
      std::find(save_steps.begin(), save_steps.end(), mode_step) != save_steps.end()) {
    return true;
  }
  if (mode_step < start_step) return false;
  if (end_step && mode_step >= *end_step) return false;
  return save_interval > 0 && mode_step % save_interval == 0;
}

Status SaveConfigMode::Validate(std::string_view what) const {
  const std::string owner(what);
  if (save_interval < 1) {
    return Status::InvalidArgument(owner + ": save_interval is " + std::to_string(save_interval) +
                                   "; it must be a whole number >= 1 (1 saves every step; "
                                   "use end_step=0 to save nothing)");
  }
  if (start_step < 0) {
    return Status::InvalidArgument(owner + ": start_step is " + std::to_string(start_step) +
                                   "; it must be >= 0 (steps count from 0)");
  }
  if (end_step && *end_step < 0) {
    return Status::InvalidArgument(owner + ": end_step is " + std::to_string(*end_step) +
                                   "; it must be >= 0 (0 saves nothing), or unset for no end");
  }
  for (int64_t s : save_steps) {
    if (s < 0) {
      return Status::InvalidArgument(owner + ": save_steps contains " + std::to_string(s) +
                                     "; steps count from 0, so every entry must be >= 0");
    }
  }
  return Status::OK();
}

SaveConfig::SaveConfig(const SaveConfigMode& all_modes) {
  for (auto& m : modes_) m = all_modes;
}

bool SaveConfig::complete() const {
  return std::all_of(modes_.begin(), modes_.end(), [](const auto& m) { return m.has_value(); });
}

void SaveConfig::MergeDefaults(const SaveConfig& defaults) {
  for (size_t i = 0; i < modes_.size(); ++i) {
    if (!modes_[i]) modes_[i] = defaults.modes_[i] ? *defaults.modes_[i] : SaveConfigMode{};
  }
}

bool SaveConfig::ShouldSave(Mode m, int64_t mode_step) const {
  const auto& c = modes_[Index(m)];
  return c && c->ShouldSave(mode_step);
}

Status SaveConfig::Validate(std::string_view what) const {
  for (Mode m : kAllModes) {
    const auto& c = modes_[Index(m)];
    if (!c) continue;
    TS_RETURN_IF_ERROR(c->Validate(std::string(what) + " (mode " + std::string(ModeName(m)) + ")"));
  }
  return Status::OK();
}

}  // namespace trainscope
