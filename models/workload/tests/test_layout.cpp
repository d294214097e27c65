#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/parameters.h"
#include "models/workload/pipeline.h"
#include "models/workload/sharding.h"
#include "models/workload/tests/configs.h"

namespace ct::workload {
namespace {

std::string error_of(const JobSpec& j, int64_t gpus) {
  try {
    validate(j, gpus);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

void expect_error(const JobSpec& j, int64_t gpus, std::initializer_list<const char*> parts) {
  const std::string msg = error_of(j, gpus);
  ASSERT_FALSE(msg.empty()) << "expected an error";
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << "\n  lacks: " << p;
}

TEST(Layout, DefaultScenarioIsValid) {
  const JobSpec j = testing::gpt3_job();
  EXPECT_NO_THROW(validate(j, 1536));
  EXPECT_NO_THROW(validate(j, 10240));  // spare nodes are allowed
  EXPECT_EQ(gpus_used(j.parallelism), 1536);
  EXPECT_EQ(microbatches(j), 64);
  EXPECT_EQ(gradient_accumulation_steps(j), 64);
  EXPECT_EQ(layers_per_stage(j), 12);
}

TEST(Layout, TensorParallelMustDivideHeads) {
  JobSpec j = testing::gpt3_job();
  j.model.heads = 92;  // 12288 / 92 is not whole either; both are reported
  j.model.hidden = 92 * 128;
  expect_error(j, 1536, {"training_job.parallelism.tensor_parallel = 8", "training_job.model.heads = 92"});
}

TEST(Layout, TensorParallelMustDivideKvHeads) {
  JobSpec j;
  j.model = testing::llama2_70b();
  j.model.kv_heads = 4;
  j.parallelism.tensor_parallel = 8;
  j.global_batch_size = 8;
  expect_error(j, 8, {"training_job.parallelism.tensor_parallel = 8", "training_job.model.kv_heads = 4"});
}

TEST(Layout, EveryVirtualStageNeedsALayer) {
  JobSpec j = testing::gpt3_job();
  j.parallelism.virtual_pipeline = 13;
  expect_error(j, 1536,
               {"training_job.parallelism.pipeline_parallel", "training_job.parallelism.virtual_pipeline",
                "8 x 13 = 104", "training_job.model.layers + 2", "got 96"});
}

// An MoE model's leading dense layers (model.moe.dense_layers) are the first layers in virtual-
// stage order: GLM-4.5's 92 layers on 4 x 2 virtual stages (11 on the two at each end, 12 on the
// others: 23 per rank) put its 3 dense layers in chunk 0 of stage 0, which then holds the fewest
// expert parameters (a dense MLP of 12288 against 160 experts). The key is checked: in
// 0..layers - 1, and only for MoE models.
TEST(Layout, LeadingDenseLayersSitInTheFirstVirtualStages) {
  JobSpec j = testing::gpt3_job();
  j.model = testing::glm45();
  j.parallelism = {};
  j.parallelism.tensor_parallel = 1;
  j.parallelism.pipeline_parallel = 4;
  j.parallelism.virtual_pipeline = 2;
  j.parallelism.data_parallel = 8;
  j.parallelism.expert_parallel = 8;
  j.global_batch_size = 64;
  EXPECT_NO_THROW(validate(j, 32));
  EXPECT_EQ(dense_layers_in_chunk(j, 0, 0), 3);
  EXPECT_EQ(dense_layers_in_stage(j, 0), 3);
  for (int s = 1; s < 4; ++s) EXPECT_EQ(dense_layers_in_stage(j, s), 0);
  const StageParameters first = stage_parameters(j, 0), second = stage_parameters(j, 1);
  ASSERT_EQ(layers_in_stage(j, 0), layers_in_stage(j, 1));
  EXPECT_EQ(second.expert - first.expert, 3 * (second.expert / 23));
  EXPECT_LT(first.dense + first.expert, second.dense + second.expert);
  j.model.moe.dense_layers = 12;  // the whole first virtual stage and one layer of the next
  EXPECT_EQ(dense_layers_in_chunk(j, 0, 0), layers_in_chunk(j, 0, 0));
  EXPECT_EQ(dense_layers_in_chunk(j, 1, 0), 12 - layers_in_chunk(j, 0, 0));
  j.model.moe.dense_layers = 92;
  expect_error(j, 32, {"training_job.model.moe.dense_layers = 92", "training_job.model.layers - 1 = 91"});
  j.model.moe.dense_layers = 3;
  j.model.moe.experts = 0;
  j.parallelism.expert_parallel = 1;
  expect_error(j, 32, {"training_job.model.moe.dense_layers = 3", "training_job.model.moe.experts > 0"});
}

// Megatron-Bridge's 405B recipes: 126 layers + embedding + loss on 16 x 8 = 128 virtual stages
// (--account-for-embedding/loss-in-pipeline-split): the first and last hold no layer.
TEST(Layout, EndVirtualStagesMayHoldOnlyTheEmbeddingAndTheLoss) {
  JobSpec j = testing::gpt3_job();
  j.model.layers = 126;
  j.parallelism.pipeline_parallel = 16;
  j.parallelism.virtual_pipeline = 8;
  j.parallelism.data_parallel = 1;
  j.global_batch_size = 16;
  EXPECT_NO_THROW(validate(j, 8 * 16));
  EXPECT_EQ(layers_in_chunk(j, 0, 0), 0);
  EXPECT_EQ(layers_in_chunk(j, 15, 7), 0);
  EXPECT_EQ(layers_in_chunk(j, 1, 0), 1);
  j.parallelism.virtual_pipeline = 9;  // 144 virtual stages for 126 layers: too many
  EXPECT_THROW(validate(j, 8 * 16), std::invalid_argument);
}

TEST(Layout, UnevenStagesAreLighterAtTheEnds) {
  // Llama 3 405B: 126 layers on 16 stages -> 7, 8 x 14, 7 (Dubey et al. 2024, Sec. 3.3.2).
  JobSpec j = testing::gpt3_job();
  j.model.layers = 126;
  j.parallelism.pipeline_parallel = 16;
  validate(j, 1 << 20);
  EXPECT_EQ(layers_in_stage(j, 0), 7);
  EXPECT_EQ(layers_in_stage(j, 15), 7);
  int64_t total = 0;
  for (int s = 0; s < 16; ++s) total += layers_in_stage(j, s);
  EXPECT_EQ(total, 126);
  for (int s = 1; s < 15; ++s) EXPECT_EQ(layers_in_stage(j, s), 8);
  EXPECT_EQ(layers_per_stage(j), 8);
  // Interleaved: 7 layers on 2 stages x 2 chunks: ceil(7/4) = 2 each, one short, taken from
  // virtual stage 0 (chunk 0 of stage 0); 5 layers: three short (virtual stages 0, 3, 1).
  j.model.layers = 7;
  j.parallelism.pipeline_parallel = 2;
  j.parallelism.virtual_pipeline = 2;
  EXPECT_EQ(layers_in_chunk(j, 0, 0), 1);
  EXPECT_EQ(layers_in_chunk(j, 1, 0), 2);
  EXPECT_EQ(layers_in_chunk(j, 0, 1), 2);
  EXPECT_EQ(layers_in_chunk(j, 1, 1), 2);
  j.model.layers = 5;
  EXPECT_EQ(layers_in_chunk(j, 0, 0), 1);
  EXPECT_EQ(layers_in_chunk(j, 1, 0), 1);
  EXPECT_EQ(layers_in_chunk(j, 0, 1), 2);
  EXPECT_EQ(layers_in_chunk(j, 1, 1), 1);
  // Even splits are unchanged.
  j.model.layers = 8;
  for (int s = 0; s < 2; ++s) {
    for (int c = 0; c < 2; ++c) EXPECT_EQ(layers_in_chunk(j, s, c), 2);
  }
}

TEST(Layout, GlobalBatchDivisibleByMicroTimesDp) {
  JobSpec j = testing::gpt3_job();
  j.micro_batch_size = 5;
  expect_error(j, 1536,
               {"training_job.global_batch_size = 1536", "training_job.micro_batch_size",
                "training_job.parallelism.data_parallel", "5 x 24 = 120"});
}

TEST(Layout, ExpertParallelRules) {
  JobSpec j;
  j.model = testing::mixtral_8x7b();
  j.parallelism.data_parallel = 6;
  j.parallelism.expert_parallel = 3;
  j.global_batch_size = 6;
  expect_error(j, 8, {"training_job.parallelism.expert_parallel = 3", "training_job.model.moe.experts = 8"});
  j.parallelism.expert_parallel = 4;
  expect_error(j, 8,
               {"training_job.parallelism.expert_parallel = 4",
                "training_job.parallelism.data_parallel x "
                "training_job.parallelism.context_parallel = 6 x 1 = 6"});
  JobSpec dense = testing::gpt3_job();
  dense.parallelism.expert_parallel = 2;
  expect_error(dense, 1536,
               {"training_job.parallelism.expert_parallel = 2", "training_job.model.moe.experts"});
}

// MoE parallel folding (Megatron expert_tensor_parallel_size below tensor_parallel): expert
// groups of EP x ETP ranks are formed over TP x CP x DP, so EP 32 fits TP 2 x DP 16 with
// ETP 1 but not with the experts split like the rest (ETP = TP). The expert state is then
// sharded over TP x CP x DP / (EP x ETP) ranks, and each GPU holds experts / EP unsplit experts.
TEST(Layout, ExpertTensorParallelFoldsExpertsOverTensorParallelRanks) {
  JobSpec j;
  j.model = testing::mixtral_8x7b();
  j.model.moe.experts = 64;
  j.parallelism.tensor_parallel = 2;
  j.parallelism.data_parallel = 16;
  j.parallelism.expert_parallel = 32;
  j.global_batch_size = 16;
  expect_error(
      j, 32,
      {"training_job.parallelism.expert_parallel = 32",
       "training_job.parallelism.data_parallel x training_job.parallelism.context_parallel = 16 x 1 = 16"});
  j.parallelism.expert_tensor_parallel = 1;
  EXPECT_NO_THROW(validate(j, 32));
  const StageParameters folded = stage_parameters(j, 0);
  j.parallelism.expert_parallel = 16;
  j.parallelism.expert_tensor_parallel = 0;  // = TP: experts split two ways, EP over DP
  const StageParameters split = stage_parameters(j, 0);
  EXPECT_EQ(folded.expert, split.expert);  // 64 / (32 x 1) = 64 / (16 x 2) experts' worth
  EXPECT_EQ(folded.expert, 32LL * 2 * layer_parameters(j.model).expert);
  j.parallelism.expert_tensor_parallel = 3;
  expect_error(j, 32, {"training_job.parallelism.expert_tensor_parallel = 3", "tensor_parallel = 2"});
  JobSpec dense = testing::gpt3_job();
  dense.parallelism.expert_tensor_parallel = 1;
  expect_error(dense, 1536, {"training_job.parallelism.expert_tensor_parallel = 1", "experts > 0"});
}

TEST(Layout, ContextParallelMustSplitTheSequence) {
  JobSpec j = testing::gpt3_job();
  j.model.seq_length = 2040;
  j.parallelism.context_parallel = 8;
  j.parallelism.data_parallel = 3;
  j.global_batch_size = 3;
  expect_error(j, 1536,
               {"training_job.parallelism.context_parallel = 16", "training_job.model.seq_length = 2040"});
}

TEST(Layout, MoreGpusThanTheCluster) {
  const JobSpec j = testing::gpt3_job();
  expect_error(j, 1024,
               {"training_job.parallelism.tensor_parallel x pipeline_parallel x data_parallel", "= 1536 GPUs",
                "1024 GPUs of the cluster"});
}

TEST(Layout, ZeroStageAndRecompute) {
  JobSpec j = testing::gpt3_job();
  j.parallelism.zero_stage = 4;
  expect_error(j, 1536, {"training_job.parallelism.zero_stage = 4"});
  j.parallelism.zero_stage = 1;
  j.recompute_granularity = "partial";
  expect_error(j, 1536, {"training_job.runtime.recompute_granularity = \"partial\"", "none|selective|full"});
  EXPECT_THROW(parse_recompute("partial"), std::invalid_argument);
  EXPECT_EQ(parse_recompute("full"), Recompute::full);
}

TEST(Layout, BadModelValues) {
  JobSpec j = testing::gpt3_job();
  j.model.activation = "relu";
  j.model.layers = 0;
  j.parallelism.tensor_parallel = 0;
  const std::string msg = error_of(j, 1536);
  EXPECT_NE(msg.find("training_job.model.activation = \"relu\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("training_job.model.layers = 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("training_job.parallelism.tensor_parallel = 0"), std::string::npos) << msg;
}

TEST(Layout, TensorParallelMustDivideFfn) {
  JobSpec j = testing::gpt3_job();
  j.model.ffn_hidden = 49148;
  expect_error(j, 1536,
               {"training_job.parallelism.tensor_parallel = 8", "training_job.model.ffn_hidden = 49148"});
}

TEST(Pipeline, BubbleFraction) {
  EXPECT_DOUBLE_EQ(bubble_fraction(8, 64), 7.0 / 64.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(8, 64, 4), 7.0 / 256.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(1, 64), 0.0);
  EXPECT_DOUBLE_EQ(bubble_share_of_step(5, 4), 0.5);
  static_assert(bubble_fraction(4, 3) == 1.0);
}

// DeepSpeed ZeRO-3 under full recompute (sharding.h): a module is gathered again for its
// backward when the modules after it in the layer, run forward then backward, hold at least
// stage3_max_reuse_distance (1e9) parameters. GPT-3 175B's layer (QKV 453M, projection 151M,
// MLP in 604M, MLP out 604M with biases) re-gathers QKV, the projection and MLP in, never MLP
// out (used again at once); a 7B-class layer re-gathers nothing; without recompute, or under
// FSDP2 (hooks on the unit, outside the checkpoint), there is no extra gather.
TEST(Zero3Plan, DeepSpeedRegathersFarModulesUnderFullRecompute) {
  JobSpec job = testing::gpt3_job();
  job.parallelism.zero_stage = 3;
  job.recompute_granularity = "full";
  for (const char* stack : {"deepspeed", "deepspeed-2021"}) {
    job.stack = stack;
    const Zero3Plan plan = zero3_plan(job);
    ASSERT_EQ(plan.modules.size(), 4u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(plan.modules[i].recompute_gather_fractions, plan.modules[i].gather_fractions) << stack << i;
    }
    EXPECT_TRUE(plan.modules[3].recompute_gather_fractions.empty()) << stack;
  }
  JobSpec small = job;
  small.model.hidden = 4096;
  small.model.heads = 32;
  for (const auto& m : zero3_plan(small).modules) EXPECT_TRUE(m.recompute_gather_fractions.empty());
  job.recompute_granularity = "selective";
  for (const auto& m : zero3_plan(job).modules) EXPECT_TRUE(m.recompute_gather_fractions.empty());
  job.recompute_granularity = "full";
  job.stack = "torchtitan";
  for (const auto& m : zero3_plan(job).modules) EXPECT_TRUE(m.recompute_gather_fractions.empty());
}

}  // namespace
}  // namespace ct::workload
