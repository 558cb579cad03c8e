// Pieces shared by RuleRunner and InvokeRule: which errors mean "no data for this step", and
// pre-loading a rule's required tensors (smdebug's req_tensors.fetch).
#pragma once

#include "trainscope/rule.h"
#include "trainscope/rule_data.h"
#include "trainscope/status.h"

namespace trainscope::rules_internal {

// NotFound, Unavailable, OutOfRange: smdebug's TensorUnavailableForStep / TensorUnavailable /
// StepUnavailable, which invoke_rule skips.
inline bool IsNoData(const Status& s) {
  return s.code() == StatusCode::kNotFound || s.code() == StatusCode::kUnavailable ||
         s.code() == StatusCode::kOutOfRange;
}

// Reads every (tensor, step) the requests name into data's cache. A regex request matches names
// saved at any step (smdebug's tensor_names(regex=...)); a plain name must exist (NotFound,
// smdebug's TensorUnavailable). The first value that cannot be read stops it with its status.
Status Prefetch(RuleData& data, const RequiredTensors& req);

}  // namespace trainscope::rules_internal
