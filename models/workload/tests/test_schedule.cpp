#include <gtest/gtest.h>

#include <map>

#include "models/workload/schedule.h"

using namespace ct::workload;

// Every (chunk, micro-batch) runs exactly one F and one B, F before B.
void expect_complete(int stage, int p, int v, int64_t m) {
  const auto order = pipeline_schedule(stage, p, v, m);
  ASSERT_EQ(order.size(), static_cast<size_t>(2 * m * v));
  std::map<std::pair<int, int64_t>, int> seen;
  for (const auto& pass : order) {
    auto& state = seen[{pass.chunk, pass.microbatch}];
    if (pass.forward) {
      EXPECT_EQ(state, 0);
      state = 1;
    } else {
      EXPECT_EQ(state, 1);
      state = 2;
    }
  }
  for (const auto& [key, state] : seen) EXPECT_EQ(state, 2);
  EXPECT_EQ(seen.size(), static_cast<size_t>(m * v));
}

TEST(Schedule, OneFOneBWarmupSteadyCooldown) {
  const auto order = pipeline_schedule(0, 4, 1, 8);
  // stage 0 of 4: 3 warmup forwards, then F/B pairs, then 3 backwards
  EXPECT_TRUE(order[0].forward && order[1].forward && order[2].forward);
  EXPECT_TRUE(order[3].forward && !order[4].forward);
  EXPECT_FALSE(order.back().forward);
  const auto last = pipeline_schedule(3, 4, 1, 8);
  EXPECT_TRUE(last[0].forward && !last[1].forward);  // last stage: no warmup
  for (int s = 0; s < 4; ++s) expect_complete(s, 4, 1, 8);
  expect_complete(0, 8, 1, 3);  // fewer micro-batches than stages
}

TEST(Schedule, InterleavedVisitsChunksInGroupsOfP) {
  for (int s = 0; s < 4; ++s) expect_complete(s, 4, 2, 8);
  const auto order = pipeline_schedule(0, 4, 2, 8);
  // first p forwards on chunk 0 (micro-batches 0..3), next p on chunk 1
  for (int k = 0; k < 4; ++k) EXPECT_EQ(order[k].chunk, 0);
  for (int k = 4; k < 8; ++k) EXPECT_EQ(order[k].chunk, 1);
  EXPECT_EQ(order[4].microbatch, 0);
  EXPECT_THROW(pipeline_schedule(0, 4, 2, 6), std::invalid_argument);
}
