// Max-min solver against closed forms (cf. SimGrid's lmm maxmin tests).
#include <gtest/gtest.h>

#include <vector>

#include "sim/maxmin.h"

using ct::sim::MaxMinSolver;
using Use = MaxMinSolver::Use;

namespace {
std::vector<int32_t> solve(MaxMinSolver& s) {
  std::vector<int32_t> changed;
  s.solve(changed);
  return changed;
}
}  // namespace

TEST(MaxMin, SingleBottleneckSharesEqually) {
  MaxMinSolver s;
  const auto link = s.add_resource(100.0);
  std::vector<int32_t> flows;
  for (int i = 0; i < 4; ++i)
    flows.push_back(s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{link, 1.0}}));
  EXPECT_EQ(solve(s).size(), 4u);
  for (auto f : flows) EXPECT_DOUBLE_EQ(s.rate(f), 25.0);
  EXPECT_DOUBLE_EQ(s.load(link), 100.0);
}

// Parking lot: one long flow over n links, one short flow per link. Each link is shared
// by two flows, so every flow gets C/2.
TEST(MaxMin, ParkingLot) {
  MaxMinSolver s;
  std::vector<Use> long_path;
  std::vector<int32_t> shorts;
  for (int i = 0; i < 5; ++i) {
    const auto r = s.add_resource(10.0);
    long_path.push_back({r, 1.0});
    shorts.push_back(s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{r, 1.0}}));
  }
  const auto lf = s.add_variable(MaxMinSolver::kUnbounded, long_path);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(lf), 5.0);
  for (auto f : shorts) EXPECT_DOUBLE_EQ(s.rate(f), 5.0);
}

// Two bottlenecks of different size: the long flow is limited by the smaller link; the
// short flow on the larger link takes the rest.
TEST(MaxMin, UnequalBottlenecksAndCaps) {
  MaxMinSolver s;
  const auto a = s.add_resource(10.0), b = s.add_resource(30.0);
  const auto lf = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{a, 1.0}, {b, 1.0}});
  const auto fa = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{a, 1.0}});
  const auto fb = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{b, 1.0}});
  const auto capped = s.add_variable(2.0, std::vector<Use>{{b, 1.0}});
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(lf), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(fa), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(capped), 2.0);
  EXPECT_DOUBLE_EQ(s.rate(fb), 23.0);
}

// A ring that crosses a link twice uses it with coefficient 2.
TEST(MaxMin, CoefficientsCountRepeatedUse) {
  MaxMinSolver s;
  const auto r = s.add_resource(12.0);
  const auto ring = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{r, 2.0}});
  const auto f = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{r, 1.0}});
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(ring), 4.0);
  EXPECT_DOUBLE_EQ(s.rate(f), 4.0);
}

TEST(MaxMin, IncrementalResolveTouchesOnlyTheChangedComponent) {
  MaxMinSolver s;
  const auto a = s.add_resource(10.0), b = s.add_resource(10.0);
  const auto fa1 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{a, 1.0}});
  const auto fb = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{b, 1.0}});
  solve(s);
  const auto fa2 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{a, 1.0}});
  auto changed = solve(s);
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(changed, (std::vector<int32_t>{fa1, fa2}));  // fb untouched
  EXPECT_DOUBLE_EQ(s.rate(fa1), 5.0);
  s.remove_variable(fa2);
  changed = solve(s);
  EXPECT_EQ(changed, std::vector<int32_t>{fa1});
  EXPECT_DOUBLE_EQ(s.rate(fa1), 10.0);
  s.set_capacity(b, 4.0);
  changed = solve(s);
  EXPECT_EQ(changed, std::vector<int32_t>{fb});
  EXPECT_DOUBLE_EQ(s.rate(fb), 4.0);
  EXPECT_EQ(s.active_variables(), 2u);
}

TEST(MaxMin, ZeroCapacityStopsFlowsAndRejectsBadInput) {
  MaxMinSolver s;
  const auto r = s.add_resource(0.0);
  const auto f = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{r, 1.0}});
  solve(s);
  EXPECT_EQ(s.rate(f), 0.0);
  EXPECT_THROW(s.add_resource(-1.0), std::invalid_argument);
  EXPECT_THROW(s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{}), std::invalid_argument);
}
