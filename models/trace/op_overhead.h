// The profiler's own CPU cost at each recorded operator, estimated from the profile itself,
// and the CPU intervals it occupies (removed from the launch timeline, launch_model.h).
//
// Under the PyTorch profiler (and the execution-trace observer recording with it) every
// operator runs RecordFunction callbacks on entry and exit: timestamps, input shapes, the
// observer's records. Part of that work lies between an operator's recorded end and the next
// recorded start on the same thread. Between two consecutive children of one C++ operator
// (siblings, neither an annotation, no launch call or other recorded event between them) no
// user code runs: without the profiler that gap is one return and one dispatcher call. So each
// such "clean sibling gap" samples the profiler's boundary cost, and
//     w = the upper median of the clean sibling gaps of every thread
// (0 with fewer than kMinSamples samples: too little evidence). The dispatcher call itself
// (a fraction of a microsecond unprofiled) stays inside w.
// Removal: before every recorded operator o (cpu_op or annotation) on thread t, the interval
//     [max(b_o, ts_o - w), ts_o]
// where b_o is the latest recorded boundary on t before ts_o (the end of the previous event on
// t at o's nesting level, or the start of the enclosing one), so measured work inside events
// is never removed. The launch timeline is one CPU clock for all threads, so an interval that
// overlaps a recorded event of another thread (a data-loader thread, say) is dropped. Profiler
// work inside operators (shape recording at entry, CUPTI's launch callbacks) is not estimated
// and stays in the timeline. Events are ordered by (start, longer first, operator before
// launch call, launch calls by correlation), so the result does not depend on map order.
#pragma once

#include <vector>

#include "models/trace/kineto_events.h"

namespace ct::trace {

inline constexpr int kMinOverheadSamples = 20;

struct OpOverhead {
  double per_op_us = 0;                     // w
  int samples = 0;                          // clean sibling gaps seen
  std::vector<kineto::Interval> intervals;  // one per recorded operator (may be empty ones)
};

// w estimated from the trace (per_op_us < 0) or given (>= 0; 0 removes nothing).
OpOverhead op_overhead(const kineto::KinetoTrace& trace, double per_op_us);

}  // namespace ct::trace
