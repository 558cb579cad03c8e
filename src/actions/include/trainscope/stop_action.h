// The "stop" action: raises the trial's stop signal (trainscope/stop_signal.h, the one reader and
// writer of the stop file) when a rule finds something. docs/formats/stop_signal.md.
#pragma once

#include <memory>
#include <string>

#include "trainscope/action.h"
#include "trainscope/env.h"
#include "trainscope/finding.h"
#include "trainscope/stop_signal.h"

namespace trainscope {

// The request a finding makes: source "rule", its rule, step, mode, explanation (its summary
// when it has none), recommendation and time.
StopRequest StopRequestFromFinding(const RuleFinding& finding);

// Notify() raises the trial's stop signal for findings (status changes are ignored), stamping the
// time when the finding has none. Reports each raise to `on_outcome` (may be empty) on the
// caller's thread. Thread-safe. `env` is not owned and must outlive the action.
std::unique_ptr<Action> NewStopTrainingAction(Env* env, std::string trial_dir,
                                              OutcomeCallback on_outcome = {});

}  // namespace trainscope
