// Max-min solver against closed forms (cf. SimGrid's lmm maxmin tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
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

// Two flows each stopped by its own NIC share an uplink with room to spare: a third flow on
// one NIC moves that NIC's flow only. The other flow, in the same connected component through
// the uplink, is neither re-solved nor reported.
TEST(MaxMin, ResolvesOnlyWhatASaturatedResourcePassesOn) {
  MaxMinSolver s;
  const auto nic_a = s.add_resource(10.0), nic_b = s.add_resource(10.0), uplink = s.add_resource(100.0);
  const auto f1 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{nic_a, 1.0}, {uplink, 1.0}});
  const auto f2 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{nic_b, 1.0}, {uplink, 1.0}});
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(f1), 10.0);
  EXPECT_DOUBLE_EQ(s.rate(f2), 10.0);
  const auto f3 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{nic_a, 1.0}});
  auto changed = solve(s);
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(changed, (std::vector<int32_t>{f1, f3}));
  EXPECT_EQ(s.last_solved(), 2u);  // f3 and what the saturated nic_a passes on: f1
  EXPECT_DOUBLE_EQ(s.rate(f1), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(f3), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(f2), 10.0);
  // Removing f2 frees room on an uplink that stopped no one: nothing to re-solve.
  s.remove_variable(f2);
  EXPECT_TRUE(solve(s).empty());
  EXPECT_EQ(s.last_solved(), 0u);
}

// A ring held by its bound shares a saturated NIC with a flow: a newcomer on that NIC takes
// from the flow, not from the ring, so the ring's other saturated NIC passes nothing on and
// its flow is not re-solved (the re-solve follows rates that move, not every saturated
// resource of an affected variable). Mutation: closing over every saturated resource of the
// affected set re-solves s2 as well (last_solved 4).
TEST(MaxMin, ResolvesAlongRatesThatMoveOnly) {
  MaxMinSolver s;
  const auto nic1 = s.add_resource(10.0), nic2 = s.add_resource(10.0);
  const auto ring = s.add_variable(2.0, std::vector<Use>{{nic1, 1.0}, {nic2, 1.0}});
  const auto s1 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{nic1, 1.0}});
  const auto s2 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{nic2, 1.0}});
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(ring), 2.0);
  EXPECT_DOUBLE_EQ(s.rate(s1), 8.0);
  EXPECT_DOUBLE_EQ(s.rate(s2), 8.0);
  const auto s3 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{nic1, 1.0}});
  auto changed = solve(s);
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(changed, (std::vector<int32_t>{s1, s3}));
  EXPECT_EQ(s.last_solved(), 3u);  // s3, and nic1's users it stopped below their rates
  EXPECT_DOUBLE_EQ(s.rate(ring), 2.0);
  EXPECT_DOUBLE_EQ(s.rate(s1), 4.0);
  EXPECT_DOUBLE_EQ(s.rate(s3), 4.0);
  EXPECT_DOUBLE_EQ(s.rate(s2), 8.0);
  // Lowering the ring's bound moves it, and the move passes through nic2 to s2.
  s.set_bound(ring, 1.0);
  changed = solve(s);
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(changed, (std::vector<int32_t>{ring, s1, s2, s3}));
  EXPECT_DOUBLE_EQ(s.rate(s1), 4.5);
  EXPECT_DOUBLE_EQ(s.rate(s2), 9.0);
}

// A flow that joins a resource with room to spare gets what the others leave; when another
// user of that resource runs faster than that, the share is not fair, and the faster user
// joins the re-solve.
TEST(MaxMin, FasterUsersOfANewBottleneckJoinTheResolve) {
  MaxMinSolver s;
  const auto link = s.add_resource(10.0), nic = s.add_resource(8.0);
  const auto f1 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{link, 1.0}, {nic, 1.0}});
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(f1), 8.0);  // its NIC; the link keeps 2 spare
  const auto f2 = s.add_variable(MaxMinSolver::kUnbounded, std::vector<Use>{{link, 1.0}});
  auto changed = solve(s);
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(changed, (std::vector<int32_t>{f1, f2}));
  EXPECT_DOUBLE_EQ(s.rate(f1), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(f2), 5.0);
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

// Random instances changed one step at a time (flows come and go, capacities and bounds
// move): after every incremental solve the allocation must be the max-min fair one. Checked
// by the bottleneck property (Bertsekas & Gallager 6.5.2): feasible, and every variable is
// at its bound or uses a saturated resource on which no other user has a larger rate; and
// equal to a solver built from scratch on the same live set (to 1e-9: the incremental solve
// does not recompute the rates it leaves alone). Every variable whose rate moved is reported.
// The later trials are larger, with ring-like variables over many resources, so that the
// re-solved set is often a small part of its connected component.
TEST(MaxMin, IncrementalSolvesStayMaxMinFairOnRandomChanges) {
  std::mt19937_64 rng(12345);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto below = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  for (int trial = 0; trial < 60; ++trial) {
    MaxMinSolver s;
    const bool large = trial >= 40;
    const int resources = large ? 20 + below(30) : 3 + below(10);
    std::vector<double> capacity;
    for (int r = 0; r < resources; ++r) capacity.push_back(s.capacity(s.add_resource(uniform(1.0, 10.0))));
    struct Live {
      int32_t id;
      double bound;
      std::vector<Use> uses;
    };
    std::vector<Live> live;
    for (int step = 0; step < (large ? 150 : 60); ++step) {
      const int action = below(10);
      if (action < 5 || live.empty()) {
        std::vector<Use> uses;
        const int n = 1 + below(large ? 12 : 4);
        for (int k = 0; k < n; ++k) {
          const int32_t r = below(resources);
          if (std::none_of(uses.begin(), uses.end(), [&](const Use& u) { return u.resource == r; }))
            uses.push_back({r, below(3) == 0 ? 2.0 : 1.0});
        }
        // Odd trials bound every variable (as NICs bound flows): resources whose users'
        // bounds sum below their capacity, which never saturate, are common there.
        const bool bounded = trial % 2 == 1 || below(4) == 0;
        const double bound = bounded ? uniform(0.5, 6.0) : MaxMinSolver::kUnbounded;
        live.push_back({s.add_variable(bound, uses), bound, uses});
      } else if (action < 8) {
        const size_t k = static_cast<size_t>(below(static_cast<int>(live.size())));
        s.remove_variable(live[k].id);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      } else if (action == 8) {
        const int32_t r = below(resources);
        capacity[static_cast<size_t>(r)] = uniform(0.5, 10.0);
        s.set_capacity(r, capacity[static_cast<size_t>(r)]);
      } else {
        Live& v = live[static_cast<size_t>(below(static_cast<int>(live.size())))];
        v.bound = trial % 2 == 1 || below(2) == 0 ? uniform(0.5, 6.0) : MaxMinSolver::kUnbounded;
        if (v.uses.empty() && std::isinf(v.bound)) v.bound = 3.0;
        s.set_bound(v.id, v.bound);
      }
      std::vector<double> before;
      for (const Live& v : live) before.push_back(s.rate(v.id));
      const std::vector<int32_t> changed = solve(s);
      for (size_t k = 0; k < live.size(); ++k) {
        const double x = s.rate(live[k].id);
        if (std::fabs(x - before[k]) > 1e-12 * std::max(std::fabs(x), std::fabs(before[k]))) {
          EXPECT_NE(std::find(changed.begin(), changed.end(), live[k].id), changed.end())
              << "trial " << trial << " step " << step << ": variable " << live[k].id << " moved unreported";
        }
      }

      MaxMinSolver fresh;
      for (int r = 0; r < resources; ++r) fresh.add_resource(capacity[static_cast<size_t>(r)]);
      std::vector<int32_t> fresh_id;
      for (const Live& v : live) fresh_id.push_back(fresh.add_variable(v.bound, v.uses));
      solve(fresh);

      std::vector<double> load(static_cast<size_t>(resources), 0.0);
      for (const Live& v : live) {
        for (const Use& u : v.uses) load[static_cast<size_t>(u.resource)] += u.coefficient * s.rate(v.id);
      }
      for (int r = 0; r < resources; ++r) {
        ASSERT_LE(load[static_cast<size_t>(r)], capacity[static_cast<size_t>(r)] * (1 + 1e-9))
            << "resource " << r;
      }
      for (size_t k = 0; k < live.size(); ++k) {
        const Live& v = live[k];
        const double x = s.rate(v.id);
        EXPECT_NEAR(x, fresh.rate(fresh_id[k]), 1e-9 * std::max(1.0, x))
            << "trial " << trial << " step " << step;
        if (x >= v.bound * (1 - 1e-9)) continue;
        bool bottlenecked = false;
        for (const Use& u : v.uses) {
          const auto r = static_cast<size_t>(u.resource);
          if (load[r] < capacity[r] * (1 - 1e-9)) continue;
          bool largest = true;
          for (const Live& w : live) {
            const bool uses_r = std::any_of(w.uses.begin(), w.uses.end(),
                                            [&](const Use& wu) { return wu.resource == u.resource; });
            if (uses_r && s.rate(w.id) > x * (1 + 1e-9)) largest = false;
          }
          bottlenecked = bottlenecked || largest;
        }
        EXPECT_TRUE(bottlenecked) << "trial " << trial << " step " << step << ": variable " << v.id << " at "
                                  << x << " below its bound has no bottleneck";
      }
    }
  }
}

// The fill's radix sort of (share, id) pairs puts them in std::sort's order, bit for bit: ties
// by id, 0.0 and -0.0 as one value, +infinity last, on sizes around the radix threshold and on
// a negative share (std::sort's fallback). Mutation: taking the id's bytes high byte first
// breaks the ties (fails).
TEST(MaxMin, ShareSortMatchesStdSortBitForBit) {
  std::mt19937_64 rng(7);
  const double inf = std::numeric_limits<double>::infinity();
  for (const size_t n : {size_t{0}, size_t{5}, ct::sim::kRadixSortMin - 1, ct::sim::kRadixSortMin,
                         size_t{1000}, size_t{4099}}) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<int32_t> ids(n);
      for (size_t i = 0; i < n; ++i)
        ids[i] = static_cast<int32_t>(i * 97 % 1000003 + (trial == 3 ? 1 << 24 : 0));
      std::shuffle(ids.begin(), ids.end(), rng);
      std::vector<std::pair<double, int32_t>> v(n);
      const double few[] = {0.0, -0.0, 1.5e9, 3.125e10, inf, 2.0};
      for (size_t i = 0; i < n; ++i) {
        const double share =
            trial == 0   ? few[rng() % 6]                                     // heavy ties
            : trial == 1 ? std::ldexp(static_cast<double>(rng() % 4096), -6)  // small range
                         : std::ldexp(static_cast<double>(rng() >> 11), -40 + static_cast<int>(rng() % 80));
        v[i] = {share, ids[i]};
      }
      if (trial == 2 && n > 0) v[n / 2].first = -1.0;  // outside the radix domain
      std::vector<std::pair<double, int32_t>> want = v, scratch;
      std::sort(want.begin(), want.end());
      ct::sim::sort_shares(v, scratch);
      ASSERT_EQ(v.size(), want.size());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::signbit(v[i].first) || v[i].first == 0.0 ? 0.0 : v[i].first,
                  std::signbit(want[i].first) || want[i].first == 0.0 ? 0.0 : want[i].first)
            << "n " << n << " trial " << trial << " at " << i;
        ASSERT_EQ(v[i].second, want[i].second) << "n " << n << " trial " << trial << " at " << i;
      }
    }
  }
}
