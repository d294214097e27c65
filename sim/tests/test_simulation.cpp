#include <gtest/gtest.h>

#include <vector>

#include "sim/simulation.h"

using namespace ct::sim;
using namespace ct::sim::literals;

namespace {

// Records (time, tag) and optionally schedules follow-ups.
struct Recorder final : EventHandler {
  Simulation& sim;
  std::vector<std::pair<int64_t, uint64_t>> seen;
  explicit Recorder(Simulation& s) : sim(s) {}
  void on_event(uint64_t tag) override {
    seen.emplace_back(sim.now().ps(), tag);
    if (tag == 1) sim.schedule_in(Duration::zero(), *this, 10);  // same-time follow-up
    if (tag == 99) sim.stop();
  }
};

}  // namespace

TEST(Simulation, RunsInOrderAndZeroDelayEventsRunAtTheSameTime) {
  Simulation sim;
  Recorder r(sim);
  sim.schedule_in(2_us, r, 2);
  sim.schedule_in(1_us, r, 1);
  sim.schedule_in(1_us, r, 3);
  EXPECT_EQ(sim.run(), 4u);
  const std::vector<std::pair<int64_t, uint64_t>> expected{
      {1000000, 1}, {1000000, 3}, {1000000, 10}, {2000000, 2}};
  EXPECT_EQ(r.seen, expected);
  EXPECT_EQ(sim.now(), Time::zero() + 2_us);
}

TEST(Simulation, RunUntilAndStop) {
  Simulation sim;
  Recorder r(sim);
  for (uint64_t i = 2; i < 8; ++i) sim.schedule_in(Duration::us(static_cast<int64_t>(i)), r, i);
  sim.schedule_in(5_us, r, 99);
  sim.run_until(Time::zero() + 4_us);
  EXPECT_EQ(r.seen.size(), 3u);
  sim.run();  // stops at tag 99 (time 5us, after tag 5 which was inserted first)
  EXPECT_EQ(r.seen.back().second, 99u);
  EXPECT_EQ(sim.pending(), 2u);
  sim.run();
  EXPECT_EQ(sim.pending(), 0u);
}

TEST(Simulation, RandomStreamsDependOnSeedAndStreamOnly) {
  Simulation a(42), b(42), c(43);
  Rng a1 = a.rng(1), b1 = b.rng(1), a2 = a.rng(2), c1 = c.rng(1);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a1.next();
    EXPECT_EQ(x, b1.next());
    EXPECT_NE(x, a2.next());
    EXPECT_NE(x, c1.next());
  }
  Rng r(1, 1);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) sum += r.exponential(2.0);
  EXPECT_NEAR(sum / 100000, 2.0, 0.03);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(r.below(7), 7u);
}
