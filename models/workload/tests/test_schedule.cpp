#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "models/workload/schedule.h"

using namespace ct::workload;

// Every (chunk, micro-batch) runs exactly one F and one B, F before B.
void expect_complete(int stage, int p, int v, int64_t m, int group = 0) {
  const auto order = pipeline_schedule(stage, p, v, m, group);
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

// Megatron-Core's schedule table (schedules.py get_schedule_table, get_pp_rank_microbatches):
// groups of n micro-batches, every chunk of a group before the next group, the last group the
// remainder; warm-up 2 (p - s - 1) + (v - 1) n forwards.
TEST(Schedule, MicrobatchGroupsFollowMegatronScheduleTable) {
  // n = p is the default order exactly
  for (int s = 0; s < 4; ++s) {
    const auto dflt = pipeline_schedule(s, 4, 2, 8), given = pipeline_schedule(s, 4, 2, 8, 4);
    ASSERT_EQ(dflt.size(), given.size());
    for (size_t i = 0; i < dflt.size(); ++i) {
      EXPECT_EQ(dflt[i].forward, given[i].forward);
      EXPECT_EQ(dflt[i].chunk, given[i].chunk);
      EXPECT_EQ(dflt[i].microbatch, given[i].microbatch);
    }
  }
  // p 4, v 2, m 10, n 5: chunk 0 on micro-batches 0-4, chunk 1 on 0-4, then 5-9 likewise
  const auto order = pipeline_schedule(0, 4, 2, 10, 5);
  const int warmup = 2 * 3 + 1 * 5;
  for (int k = 0; k < warmup; ++k) ASSERT_TRUE(order[static_cast<size_t>(k)].forward) << k;
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(order[static_cast<size_t>(k)].chunk, 0);
    EXPECT_EQ(order[static_cast<size_t>(k)].microbatch, k);
    EXPECT_EQ(order[static_cast<size_t>(5 + k)].chunk, 1);
    EXPECT_EQ(order[static_cast<size_t>(5 + k)].microbatch, k);
  }
  EXPECT_EQ(order[10].chunk, 0);
  EXPECT_EQ(order[10].microbatch, 5);
  // then 1F1B: forward entry 11, backward entry 0 (chunk reversed: the last chunk first)
  EXPECT_TRUE(order[11].forward);
  EXPECT_FALSE(order[12].forward);
  EXPECT_EQ(order[12].chunk, 1);
  EXPECT_EQ(order[12].microbatch, 0);
  for (int s = 0; s < 4; ++s) expect_complete(s, 4, 2, 10, 5);
  // a last group shorter than n: m 12, n 8 -> [0, 8), [8, 12)
  const auto tail = pipeline_schedule(3, 4, 2, 12, 8);
  std::vector<std::pair<int, int64_t>> forwards;
  for (const auto& pass : tail) {
    if (pass.forward) forwards.emplace_back(pass.chunk, pass.microbatch);
  }
  const std::vector<std::pair<int, int64_t>> end = {{0, 8}, {0, 9}, {0, 10}, {0, 11},
                                                    {1, 8}, {1, 9}, {1, 10}, {1, 11}};
  EXPECT_TRUE(std::equal(end.begin(), end.end(), forwards.end() - 8));
  for (int s = 0; s < 4; ++s) expect_complete(s, 4, 2, 12, 8);
  // Megatron-Core's bounds: p <= n <= m, and a last group of 0 or at least p (n < p would
  // close a cycle: schedule.h)
  EXPECT_THROW(pipeline_schedule(0, 4, 2, 8, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(0, 4, 2, 8, 9), std::invalid_argument);
  EXPECT_NO_THROW(pipeline_schedule(0, 4, 2, 10, 6));                      // a last group of 4 = p
  EXPECT_THROW(pipeline_schedule(0, 4, 2, 11, 5), std::invalid_argument);  // last group of 1
  // with n given, m need not be a multiple of p
  EXPECT_NO_THROW(pipeline_schedule(0, 4, 2, 6, 6));
}
