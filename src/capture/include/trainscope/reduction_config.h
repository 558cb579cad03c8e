// ReductionConfig: what the hook saves of a tensor: the raw value, its shape, and reductions
// (smdebug/core/reduction_config.py), plus trainscope's nan_count, inf_count and zero_fraction.
//
// smdebug keeps four lists: reductions (min, max, mean, std, variance, sum, prod), abs_reductions
// (the same on |x|), norms (l1, l2) and abs_norms. Our additions go in `reductions`. Each
// requested reduction becomes its own tensor "smdebug/reductions/[abs_]<op>/<tensor>", computed
// by ComputeStats (reductions.h), so the hook and the reader agree on every value.
//
// Thread safety: values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainscope/reductions.h"
#include "trainscope/status.h"

namespace trainscope {

struct ReductionConfig {
  std::vector<ReductionOp> reductions;      // not kL1/kL2
  std::vector<ReductionOp> abs_reductions;  // not kL1/kL2
  std::vector<ReductionOp> norms;           // kL1/kL2 only
  std::vector<ReductionOp> abs_norms;       // kL1/kL2 only
  bool save_raw_tensor = false;
  bool save_shape = false;

  // Parses smdebug's comma-separated list ("min,abs_mean,l2_norm,abs_l1_norm,nan_count"), routing
  // each token to its list ("l2" without "_norm" is taken as a norm). Blank tokens are skipped.
  // InvalidArgument with ParseReduction's message (naming the token) on an unknown name.
  static Result<ReductionConfig> Parse(std::string_view comma_list, bool save_raw_tensor = false,
                                       bool save_shape = false);

  // smdebug's one-string form, in its order: reductions, norms as "<n>_norm", abs reductions as
  // "abs_<r>", abs norms as "abs_<n>_norm".
  std::string ReductionsString() const;
  // Every reduction to compute, in the order of ReductionsString(), without duplicates.
  std::vector<Reduction> All() const;
  bool has_reductions() const {
    return !reductions.empty() || !abs_reductions.empty() || !norms.empty() || !abs_norms.empty();
  }
  // InvalidArgument if a norm sits in `reductions` or a non-norm in `norms` (says which list to
  // move it to). `what` names the owner ("collection 'weights'").
  Status Validate(std::string_view what = "ReductionConfig") const;

  bool operator==(const ReductionConfig&) const = default;
};

// Parses one smdebug reduction name for a given list ("reductions", "abs_reductions", "norms",
// "abs_norms"); used by the bindings to validate Python lists with one message format.
Result<ReductionOp> ParseReductionForList(std::string_view list, std::string_view name);

}  // namespace trainscope
