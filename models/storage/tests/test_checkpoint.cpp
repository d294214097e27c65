#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "models/storage/checkpoint.h"
#include "models/workload/memory.h"
#include "models/workload/parameters.h"
#include "models/workload/tests/configs.h"

namespace ct::storage {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// GPT-3 175B, TP 8, PP 8, DP 24 on 8-GPU nodes: 1536 GPUs, 192 nodes.
TEST(CheckpointSize, TotalIsFourteenBytesPerParameterPlusExtra) {
  const workload::JobSpec j = workload::testing::gpt3_job();
  const CheckpointSize s = checkpoint_size(j, 8);
  const int64_t n = workload::total_parameters(j.model);
  EXPECT_EQ(s.gpus, 1536);
  EXPECT_EQ(s.nodes, 192);
  EXPECT_EQ(s.weights_bytes, 2 * n);
  EXPECT_EQ(s.optimizer_bytes, 12 * n);
  EXPECT_EQ(s.extra_bytes, 1536 * kMiB);
  EXPECT_EQ(s.total_bytes, 14 * n + 1536 * kMiB);
  // About 2.45 TB for 175B parameters.
  EXPECT_NEAR(static_cast<double>(s.total_bytes), 14 * 174.6e9, 0.01 * 14 * 174.6e9);
}

TEST(CheckpointSize, DistributedOptimizerShardsOptimizerOverDataParallel) {
  const workload::JobSpec j = workload::testing::gpt3_job();
  const CheckpointSize s = checkpoint_size(j, 8);
  double most = 0;
  for (int stage = 0; stage < 8; ++stage) {
    const auto p = workload::stage_parameters(j, stage);
    const double owned = static_cast<double>(p.dense + p.expert);
    most = std::max(most, 2 * owned + 12 * owned / 24);
  }
  EXPECT_NEAR(static_cast<double>(s.per_gpu_bytes), most + kMiB, 1.0);
  EXPECT_EQ(s.writers, 1536);
  EXPECT_EQ(s.writer_nodes, 192);
}

TEST(CheckpointSize, WithoutZeroOnlyDataParallelRankZeroWrites) {
  workload::JobSpec j = workload::testing::gpt3_job();
  j.parallelism.zero_stage = 0;
  const CheckpointSize s = checkpoint_size(j, 8);
  double most = 0;
  for (int stage = 0; stage < 8; ++stage) {
    const auto p = workload::stage_parameters(j, stage);
    most = std::max(most, 14.0 * static_cast<double>(p.dense + p.expert));
  }
  EXPECT_NEAR(static_cast<double>(s.per_gpu_bytes), most + kMiB, 1.0);
  EXPECT_EQ(s.writers, 64);      // TP 8 x PP 8
  EXPECT_EQ(s.writer_nodes, 8);  // one node per pipeline stage
  EXPECT_EQ(s.total_bytes, checkpoint_size(workload::testing::gpt3_job(), 8).total_bytes);
}

TEST(CheckpointSize, FullyParallelSaveSpreadsEverythingEvenly) {
  const workload::JobSpec j = workload::testing::gpt3_job();
  CheckpointOptions o;
  o.fully_parallel_save = true;
  const CheckpointSize s = checkpoint_size(j, 8, o);
  // Balanced: G x per-GPU bytes is the total within the stage imbalance (embedding stages).
  const double spread = static_cast<double>(s.per_gpu_bytes) * static_cast<double>(s.gpus);
  EXPECT_GT(spread, static_cast<double>(s.total_bytes) * 0.99);
  EXPECT_LT(spread, static_cast<double>(s.total_bytes) * 1.10);
  // ZeRO-3 shards the weights too: same bytes per GPU as fully parallel save.
  workload::JobSpec z3 = j;
  z3.parallelism.zero_stage = 3;
  EXPECT_NEAR(static_cast<double>(checkpoint_size(z3, 8).per_gpu_bytes), static_cast<double>(s.per_gpu_bytes),
              2.0);
}

TEST(CheckpointSize, ExpertsShardOverExpertParallel) {
  workload::JobSpec j;
  j.model = workload::testing::mixtral_8x7b();
  j.parallelism.tensor_parallel = 2;
  j.parallelism.pipeline_parallel = 1;
  j.parallelism.data_parallel = 8;
  j.parallelism.expert_parallel = 8;
  const CheckpointSize s = checkpoint_size(j, 8);
  EXPECT_EQ(s.total_bytes, 14 * workload::total_parameters(j.model) + 16 * kMiB);
  const auto p = workload::stage_parameters(j, 0);
  const double expected = 2.0 * static_cast<double>(p.dense + p.expert) +
                          12.0 * (static_cast<double>(p.dense) / 8 + static_cast<double>(p.expert) / 1);
  EXPECT_NEAR(static_cast<double>(s.per_gpu_bytes), expected + kMiB, 1.0);
}

TEST(CheckpointSize, RejectsBadInputs) {
  workload::JobSpec j = workload::testing::gpt3_job();
  EXPECT_THROW(checkpoint_size(j, 0), std::invalid_argument);
  j.parallelism.data_parallel = 0;
  EXPECT_THROW(checkpoint_size(j, 8), std::invalid_argument);
  EXPECT_THROW(checkpoint_size(workload::JobSpec{}, 8), std::invalid_argument);
}

}  // namespace
}  // namespace ct::storage
