// Turns two raw snapshots of counters into a SystemSample of levels and rates. Private; pure.
#pragma once

#include "profiler/proc_stats.h"
#include "trainscope/system_sampler.h"

namespace trainscope::proc {

// Fills *out from `cur` (levels) and the differences cur - prev (rates). `prev` may be null (the
// first snapshot): then out->has_rates is false and only levels are set. A counter that went
// backwards (a wrap, a reset) leaves its rate out. GPU fields are not touched.
void ComputeSample(const RawSnapshot* prev, const RawSnapshot& cur, int64_t ticks_per_s,
                   int64_t page_size, SystemSample* out);

}  // namespace trainscope::proc
