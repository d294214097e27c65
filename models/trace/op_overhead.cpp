// Profiler cost per recorded operator (maths in op_overhead.h).
#include "models/trace/op_overhead.h"

#include <algorithm>
#include <limits>
#include <map>

namespace ct::trace {
namespace {

struct ThreadEvent {
  double ts = 0, end = 0;
  bool op = false;  // a recorded operator (cpu_op or annotation), else a launch call
  bool annotation = false;
};

struct Level {
  int event = -1;       // -1: the thread's top level
  int last_child = -1;  // the latest child that ended
};

// Sorted, disjoint union of a thread's event intervals.
std::vector<kineto::Interval> union_of(const std::vector<ThreadEvent>& events) {
  std::vector<kineto::Interval> out;
  for (const ThreadEvent& e : events) {  // sorted by start
    if (!out.empty() && e.ts <= out.back().end) {
      out.back().end = std::max(out.back().end, e.end);
    } else {
      out.push_back({e.ts, e.end});
    }
  }
  return out;
}

bool overlaps(const std::vector<kineto::Interval>& busy, const kineto::Interval& i) {
  const auto it = std::upper_bound(busy.begin(), busy.end(), i.begin,
                                   [](double t, const kineto::Interval& b) { return t < b.end; });
  return it != busy.end() && it->begin < i.end;
}

}  // namespace

OpOverhead op_overhead(const kineto::KinetoTrace& trace, double per_op_us) {
  std::map<int64_t, std::vector<ThreadEvent>> threads;
  for (const kineto::CpuOp& op : trace.ops)
    threads[op.tid].push_back({op.ts, op.ts + op.dur, true, op.annotation});
  std::vector<std::pair<int64_t, const kineto::Launch*>> calls;  // by correlation: no map order
  for (const auto& [correlation, call] : trace.launches) calls.emplace_back(correlation, &call);
  std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [correlation, call] : calls)
    threads[call->tid].push_back({call->ts, call->ts + call->dur, false, false});
  for (const kineto::Launch& call : trace.syncs)
    threads[call.tid].push_back({call.ts, call.ts + call.dur, false, false});

  std::vector<double> gaps;
  struct Boundary {
    int64_t tid;
    kineto::Interval gap;  // {b_o, ts_o}
  };
  std::vector<Boundary> boundaries;
  std::map<int64_t, std::vector<kineto::Interval>> busy;
  for (auto& [tid, events] : threads) {
    std::stable_sort(events.begin(), events.end(), [](const ThreadEvent& a, const ThreadEvent& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.end != b.end) return a.end > b.end;  // an enclosing event first
      return a.op && !b.op;                      // an operator encloses the launch it made
    });
    busy[tid] = union_of(events);
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
        if (cpp_parent && previous.op && !previous.annotation && e.op && !e.annotation &&
            e.ts >= previous.end) {
          gaps.push_back(e.ts - previous.end);
        }
      }
      if (e.op) boundaries.push_back({tid, {boundary, e.ts}});
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
    for (const Boundary& b : boundaries) {
      const kineto::Interval removed{std::max(b.gap.begin, b.gap.end - out.per_op_us), b.gap.end};
      bool clear = true;
      for (const auto& [other, intervals] : busy)
        clear = clear && (other == b.tid || !overlaps(intervals, removed));
      if (clear) out.intervals.push_back(removed);
    }
  }
  return out;
}

}  // namespace ct::trace
