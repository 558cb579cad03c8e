// Tensor statistics (trainscope/reductions.h's TensorStats) computed with LibTorch operations on
// the tensor's own device: the one implementation of the on-device statistics. The C++ hook
// (trainscope/torch_hook.h) calls TorchTensorStats for a tensor on a GPU; trainscope.pytorch's
// hook calls TorchStatsOnDevice through the extension trainscope._torch_stats
// (python/src/torch/torch_stats_py.cc), queues the result and moves every statistic of a step to
// the host at once. Which statistics a reduction reads is the core's table, FieldsRead.
//
// Thread safety: both functions are thread-safe (they share no state; LibTorch's operations are).
#pragma once

#include <ATen/core/Tensor.h>

#include "trainscope/reductions.h"
#include "trainscope/status.h"

namespace trainscope {

// The statistics `fields` asks for, as ONE 1-D float64 tensor on t's device, computed with torch
// operations there and queued, not waited for: no host synchronisation, so a caller may gather
// the tensors of many calls and move them to the host in one transfer. Floating tensors stay in
// their dtype (no float64 copy of the whole tensor is kept: each sum and variance reads a float64
// copy made for it alone); integer and bool tensors are read as float64, bool as 0 and 1;
// complex tensors reduce |x|.
//
// The order of the values: fields.ToVector() less StatsField::kCount (StatsField order, i.e.
// _core.STATS_FIELDS' order, whatever order the caller built `fields` in); count is never in the
// tensor (it is t.numel(), known without reading the elements). So its length is the number of
// fields in `fields` other than kCount, 0 when there are none. Each value is the field ComputeStats
// gives for t (the definitions are StatsField's). For an empty tensor (n == 0) the values are
// TensorStats' defaults, but min and abs_min are +inf and max and abs_max -inf (nothing is read).
// InvalidArgument for an undefined tensor or when LibTorch fails (e.g. an unsupported dtype).
Result<at::Tensor> TorchStatsOnDevice(const at::Tensor& t,
                                      StatsFieldSet fields = StatsFieldSet::All());

// The statistics ComputeStats(view) gives, computed with torch operations on the tensor's own
// device (TorchStatsOnDevice), with one transfer to the host (which waits for them). Only
// `fields` (and count) are computed; the others keep TensorStats' defaults, but min and abs_min
// start at +inf and max and abs_max at -inf. The hook uses it for tensors on a GPU when only
// reductions are due, with fields = FieldsRead(the planned reductions) (trainscope/reductions.h:
// the one table of which statistics a reduction reads).
Result<TensorStats> TorchTensorStats(const at::Tensor& t,
                                     StatsFieldSet fields = StatsFieldSet::All());

}  // namespace trainscope
