// Profiler cost per recorded operator (maths in op_overhead.h).
#include "models/trace/op_overhead.h"

#include <algorithm>
#include <limits>
#include <map>

namespace ct::trace {
namespace {

struct ThreadEvent {
  double ts = 0, end = 0;
  bool op = false;          // a recorded operator (cpu_op or annotation), else a launch call
  bool annotation = false;
};

struct Level {
  int event = -1;       // -1: the thread's top level
  int last_child = -1;  // the latest child that ended
};

}  // namespace

OpOverhead op_overhead(const kineto::KinetoTrace& trace, double per_op_us) {
  std::map<int64_t, std::vector<ThreadEvent>> threads;
  for (const kineto::CpuOp& op : trace.ops) threads[op.tid].push_back({op.ts, op.ts + op.dur, true, op.annotation});
  for (const auto& [correlation, call] : trace.launches) threads[call.tid].push_back({call.ts, call.ts + call.dur, false, false});
  for (const kineto::Launch& call : trace.syncs) threads[call.tid].push_back({call.ts, call.ts + call.dur, false, false});

  std::vector<double> gaps;
  std::vector<kineto::Interval> boundaries;  // {b_o, ts_o} per operator
  for (auto& [tid, events] : threads) {
    std::sort(events.begin(), events.end(), [](const ThreadEvent& a, const ThreadEvent& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.end > b.end;  // an enclosing event first
    });
    std::vector<Level> stack{Level{}};
    for (size_t i = 0; i < events.size(); ++i) {
      const ThreadEvent& e = events[i];
      while (stack.size() > 1 && events[static_cast<size_t>(stack.back().event)].end <= e.ts) {
        const int done = stack.back().event;
        stack.pop_back();
        stack.back().last_child = done;
      }
      const Level& parent = stack.back();
      double boundary = -std::numeric_limits<double>::infinity();
      if (parent.event >= 0) boundary = events[static_cast<size_t>(parent.event)].ts;
      if (parent.last_child >= 0) {
        const ThreadEvent& previous = events[static_cast<size_t>(parent.last_child)];
        boundary = std::max(boundary, previous.end);
        const bool cpp_parent = parent.event >= 0 && events[static_cast<size_t>(parent.event)].op &&
                                !events[static_cast<size_t>(parent.event)].annotation;
        if (cpp_parent && previous.op && !previous.annotation && e.op && !e.annotation && e.ts >= previous.end) {
          gaps.push_back(e.ts - previous.end);
        }
      }
      if (e.op) boundaries.push_back({boundary, e.ts});
      stack.push_back({static_cast<int>(i), -1});
    }
  }

  OpOverhead out;
  out.samples = static_cast<int>(gaps.size());
  if (per_op_us >= 0) {
    out.per_op_us = per_op_us;
  } else if (out.samples >= kMinOverheadSamples) {
    const auto mid = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2);
    std::nth_element(gaps.begin(), mid, gaps.end());
    out.per_op_us = *mid;
  }
  if (out.per_op_us > 0) {
    out.intervals.reserve(boundaries.size());
    for (const kineto::Interval& b : boundaries) out.intervals.push_back({std::max(b.begin, b.end - out.per_op_us), b.end});
  }
  return out;
}

}  // namespace ct::trace
