// Profiler cost per recorded operator (op_overhead.h) on hand-built threads: only clean C++
// sibling gaps are samples, the median is the estimate, removal never cuts into an event.
#include <gtest/gtest.h>

#include "models/trace/op_overhead.h"

namespace ct::trace {
namespace {

using kineto::CpuOp;
using kineto::Interval;
using kineto::KinetoTrace;
using kineto::Launch;

CpuOp op(double ts, double dur, int64_t tid, bool annotation = false) {
  CpuOp o;
  o.name = annotation ? "Optimizer.step#AdamW.step" : "aten::op";
  o.ts = ts;
  o.dur = dur;
  o.tid = tid;
  o.annotation = annotation;
  return o;
}

// Thread 1: a C++ parent [0, 1000] with 30 children of 10 us: the first at 5, then gaps of
// 4 us except two of 1 us (children 5 and 6) and a launch call in the gap before child 20;
// then three top-level ops 100 us apart. Thread 2: an annotation whose 25 children are 50 us
// apart (Python between them: no samples).
KinetoTrace two_threads() {
  KinetoTrace t;
  t.ops.push_back(op(0, 1000, 1));
  double ts = 5;
  for (int k = 0; k < 30; ++k) {
    if (k > 0) ts += (k == 5 || k == 6) ? 1 : 4;
    if (k == 20) {
      t.launches[7] = Launch{"cudaLaunchKernel", ts, 2, 1, -1};
      ts += 4;
    }
    t.ops.push_back(op(ts, 10, 1));
    ts += 10;
  }
  for (int k = 0; k < 3; ++k) t.ops.push_back(op(1100 + 110 * k, 10, 1));
  t.ops.push_back(op(5000, 2000, 2, true));
  for (int k = 0; k < 25; ++k) t.ops.push_back(op(5010 + 60 * k, 10, 2));
  return t;
}

// Whether `removed` overlaps a recorded event it is not wholly inside (an enclosing operator).
bool cuts_into_an_event(const KinetoTrace& t, const Interval& removed) {
  const auto cuts = [&](double ts, double end) {
    return ts < removed.end && end > removed.begin && !(ts <= removed.begin && end >= removed.end);
  };
  for (const CpuOp& o : t.ops) {
    if (cuts(o.ts, o.ts + o.dur)) return true;
  }
  for (const auto& [correlation, call] : t.launches) {
    if (cuts(call.ts, call.ts + call.dur)) return true;
  }
  return false;
}

TEST(OpOverhead, MedianOfCleanSiblingGaps) {
  const KinetoTrace t = two_threads();
  const OpOverhead est = op_overhead(t, -1);
  // 29 gaps between the 30 children, less the one with a launch call: 26 of 4 us, 2 of 1 us.
  EXPECT_EQ(est.samples, 28);
  EXPECT_DOUBLE_EQ(est.per_op_us, 4.0);
  ASSERT_EQ(est.intervals.size(), t.ops.size());
  double removed = 0;
  for (const Interval& i : est.intervals) {
    EXPECT_LE(i.end - i.begin, 4.0 + 1e-12);
    EXPECT_FALSE(cuts_into_an_event(t, i)) << i.begin << ".." << i.end;
    removed += i.end - i.begin;
  }
  // Thread 1: parent (4) + first child (4, its parent started 5 us before) + 26 x 4 + 2 x 1 +
  // the child after the launch (2: the launch ended 2 us before) + 3 top-level (4 each);
  // thread 2: annotation (4) + 25 children (4 each).
  EXPECT_DOUBLE_EQ(removed, 4 + 4 + 26 * 4 + 2 * 1 + 2 + 3 * 4 + 4 + 25 * 4);
}

// One CPU clock for all threads: a removal interval that overlaps another thread's recorded
// event is dropped (here a data-loader thread busy over thread 1's last two top-level gaps).
TEST(OpOverhead, NeverCutsIntoAnotherThreadsEvents) {
  KinetoTrace t = two_threads();
  const double before = [&] {
    double sum = 0;
    for (const Interval& i : op_overhead(t, -1).intervals) sum += i.end - i.begin;
    return sum;
  }();
  t.ops.push_back(op(1150, 250, 3));  // thread 3: [1150, 1400]
  const OpOverhead est = op_overhead(t, -1);
  double after = 0;
  for (const Interval& i : est.intervals) {
    after += i.end - i.begin;
    EXPECT_FALSE(i.begin < 1400 && i.end > 1150) << i.begin << ".." << i.end;
  }
  // Thread 1's gaps before 1210 and 1320 (4 us each) are dropped; thread 3's own is kept.
  EXPECT_DOUBLE_EQ(after, before - 2 * 4 + 4);
}

TEST(OpOverhead, GivenOrTooLittleEvidence) {
  KinetoTrace t = two_threads();
  const OpOverhead given = op_overhead(t, 2.5);
  EXPECT_DOUBLE_EQ(given.per_op_us, 2.5);
  EXPECT_EQ(given.samples, 28);
  EXPECT_DOUBLE_EQ(given.intervals[6].end - given.intervals[6].begin, 1.0);  // child 5: a 1 us gap
  EXPECT_DOUBLE_EQ(given.intervals[8].end - given.intervals[8].begin, 2.5);  // child 7: 4 us
  EXPECT_TRUE(op_overhead(t, 0).intervals.empty());
  // Keep 19 children: 18 samples, fewer than kMinOverheadSamples: nothing is removed.
  t.ops.erase(t.ops.begin() + 20, t.ops.begin() + 31);
  t.launches.clear();
  const OpOverhead thin = op_overhead(t, -1);
  EXPECT_EQ(thin.samples, 18);
  EXPECT_LT(thin.samples, kMinOverheadSamples);
  EXPECT_EQ(thin.per_op_us, 0.0);
  EXPECT_TRUE(thin.intervals.empty());
}

}  // namespace
}  // namespace ct::trace
