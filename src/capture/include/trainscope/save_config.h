// SaveConfig: at which steps a collection is saved, per mode, with smdebug's semantics
// (smdebug/core/save_config.py; docs/capture.md).
//
// A step is saved when its MODE step is in save_steps, or when start_step <= step < end_step
// (end exclusive, no end_step = unbounded) and step % save_interval == 0 (the interval counts
// from 0, not from start_step). end_step = 0 switches a collection off.
//
// Thread safety: values; distinct objects may be used from distinct threads.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/modes.h"
#include "trainscope/status.h"

namespace trainscope {

struct SaveConfigMode {
  int64_t save_interval = 500;
  int64_t start_step = 0;
  std::optional<int64_t> end_step;  // exclusive; nullopt = never ends
  std::vector<int64_t> save_steps;  // saved in addition to the interval

  // REQUIRES: Validate().ok()
  bool ShouldSave(int64_t mode_step) const;
  // InvalidArgument saying what to change: save_interval must be >= 1, start_step, end_step and
  // save_steps must be >= 0. `what` names the owner in the message (e.g. "collection 'weights'").
  Status Validate(std::string_view what = "SaveConfig") const;
  bool operator==(const SaveConfigMode&) const = default;
};

// One SaveConfigMode per mode; a mode may be unset until defaults are merged in.
class SaveConfig {
 public:
  // Every mode unset.
  SaveConfig() = default;
  // The same configuration for every mode.
  explicit SaveConfig(const SaveConfigMode& all_modes);

  const std::optional<SaveConfigMode>& mode(Mode m) const { return modes_[Index(m)]; }
  void set_mode(Mode m, std::optional<SaveConfigMode> c) { modes_[Index(m)] = std::move(c); }
  bool complete() const;  // every mode set

  // Fills each unset mode from `defaults`, and what is still unset with SaveConfigMode{}
  // (smdebug's merge_default_save_config).
  void MergeDefaults(const SaveConfig& defaults);
  // False for an unset mode.
  bool ShouldSave(Mode m, int64_t mode_step) const;
  Status Validate(std::string_view what = "SaveConfig") const;

  bool operator==(const SaveConfig&) const = default;

 private:
  static size_t Index(Mode m) { return static_cast<size_t>(m) - 1; }
  std::array<std::optional<SaveConfigMode>, 4> modes_;
};

}  // namespace trainscope
