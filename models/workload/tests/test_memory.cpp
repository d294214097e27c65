#include <gtest/gtest.h>

#include <cmath>

#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/parameters.h"
#include "models/workload/tests/configs.h"

namespace ct::workload {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// Korthikanti et al. MLSys'23 Table 2 forms, for GPT-3 175B, s 2048, b 1, a 96, h 12288.
TEST(Memory, ActivationsPerLayerMatchKorthikanti) {
  JobSpec j = testing::gpt3_job();
  j.attention = "unfused";  // the paper's attention materialises the scores
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;
  // TP + SP: s b h (34 + 5 a s / h) / t
  EXPECT_EQ(activation_bytes_per_layer(j, Recompute::none),
            static_cast<int64_t>(sbh * (34 + 5 * a * s / h) / t));
  // selective: s b h 34 / t
  EXPECT_EQ(activation_bytes_per_layer(j, Recompute::selective), static_cast<int64_t>(sbh * 34 / t));
  // full: 2 s b h / t
  EXPECT_EQ(activation_bytes_per_layer(j, Recompute::full), static_cast<int64_t>(2 * sbh / t));
  // TP without SP: s b h (10 + 24/t + 5 a s/(h t))
  j.parallelism.sequence_parallel = false;
  EXPECT_EQ(activation_bytes_per_layer(j, Recompute::none),
            static_cast<int64_t>(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
  EXPECT_EQ(activation_bytes_per_layer(j, Recompute::full), static_cast<int64_t>(2 * sbh));
  // No TP: s b h (34 + 5 a s / h), whatever sequence_parallel says.
  j.parallelism.tensor_parallel = 1;
  j.parallelism.sequence_parallel = true;
  EXPECT_EQ(activation_bytes_per_layer(j, Recompute::none), static_cast<int64_t>(sbh * (34 + 5 * a * s / h)));
  // Micro-batch scales linearly.
  j.micro_batch_size = 4;
  EXPECT_EQ(activation_bytes_per_layer(j, Recompute::selective), static_cast<int64_t>(4 * sbh * 34));
}

// Megatron's recompute modules keep none of what they replay (per token, Korthikanti's terms):
// layernorm the two norm outputs (4h of the 34), mlp the MLP's internals (fc1 and GELU outputs,
// 16h); naming modules without core_attn keeps the attention scores again. MoE: moe_act the
// routed experts' activation outputs (2 bytes x expert width x top_k), moe the whole expert
// block (6 x width x top_k with SwiGLU, and the 2 h x top_k permuted tokens kept whole).
// Latent attention: mla_up_proj the up-projected Q, K (heads x 192) and V (heads x 128).
TEST(Memory, RecomputeModulesDropWhatTheyReplay) {
  namespace rm = recompute_module;
  JobSpec j = testing::gpt3_job();
  j.attention = "unfused";
  const double s = 2048, h = 12288, a = 96, t = 8, sbh = s * h;
  auto bytes = [&](uint32_t modules) {
    j.recompute_modules = modules;
    return activation_bytes_per_layer(j, Recompute::selective);
  };
  EXPECT_EQ(bytes(rm::core_attn), static_cast<int64_t>(sbh * 34 / t));
  EXPECT_EQ(bytes(rm::core_attn | rm::layernorm), static_cast<int64_t>(sbh * 30 / t));
  EXPECT_EQ(bytes(rm::core_attn | rm::layernorm | rm::mlp), static_cast<int64_t>(sbh * 14 / t));
  EXPECT_EQ(bytes(rm::mlp), static_cast<int64_t>(sbh * (18 + 5 * a * s / h) / t));
  JobSpec moe = testing::gpt3_job();
  moe.model = testing::mixtral_8x7b();
  moe.parallelism.tensor_parallel = 1;
  const double tokens = 4096, fe = 14336, hm = 4096;
  auto moe_bytes = [&](uint32_t modules) {
    moe.recompute_modules = modules;
    return static_cast<double>(activation_bytes_per_layer(moe, Recompute::selective));
  };
  const double base = moe_bytes(rm::core_attn);
  EXPECT_NEAR(base - moe_bytes(rm::core_attn | rm::moe_act), tokens * 2 * fe * 2, 1.0);
  EXPECT_NEAR(base - moe_bytes(rm::core_attn | rm::moe), tokens * (6 * fe * 2 + 2 * hm * 2), 1.0);
  // A shared expert of the same width: shared_experts drops its 6 x width, moe it with the rest.
  moe.model.moe.shared_experts = 1;
  const double shared_base = moe_bytes(rm::core_attn);
  EXPECT_NEAR(shared_base - moe_bytes(rm::core_attn | rm::shared_experts), tokens * 6 * fe, 1.0);
  EXPECT_NEAR(shared_base - moe_bytes(rm::core_attn | rm::moe), tokens * (6 * fe * 3 + 2 * hm * 2), 1.0);
  moe.model.moe.shared_experts = 0;
  JobSpec mla = moe;
  mla.model.mla = {1536, 512, 128, 64, 128};
  mla.model.heads = 128;
  mla.recompute_modules = rm::core_attn;
  const double mla_base = static_cast<double>(activation_bytes_per_layer(mla, Recompute::selective));
  mla.recompute_modules = rm::core_attn | rm::mla_up_proj;
  EXPECT_NEAR(mla_base - static_cast<double>(activation_bytes_per_layer(mla, Recompute::selective)),
              tokens * (4.0 * 128 * 192 + 2.0 * 128 * 128), 1.0);
}

TEST(Memory, InFlightMicrobatches) {
  JobSpec j = testing::gpt3_job();  // p 8, m 64
  EXPECT_DOUBLE_EQ(in_flight_microbatches(j, 0), 8.0);
  EXPECT_DOUBLE_EQ(in_flight_microbatches(j, 7), 1.0);
  // Interleaved: first stage p (1 + (p - 1)/(p v)) micro-batches' worth.
  j.parallelism.virtual_pipeline = 3;
  EXPECT_DOUBLE_EQ(in_flight_microbatches(j, 0), 8.0 * (1.0 + 7.0 / 24.0));
  // Micro-batch groups of n (schedule.h): 2 (p - 1) + (v - 1) n + 1 chunks of L / (p v) layers
  j.parallelism.microbatch_group = 16;
  EXPECT_DOUBLE_EQ(in_flight_microbatches(j, 0), (14.0 + 2.0 * 16.0 + 1.0) / 3.0);
  j.parallelism.microbatch_group = 2;
  EXPECT_DOUBLE_EQ(in_flight_microbatches(j, 0), (14.0 + 2.0 * 2.0 + 1.0) / 3.0);
  j.parallelism.microbatch_group = 8;  // = p: the default
  EXPECT_DOUBLE_EQ(in_flight_microbatches(j, 0), 8.0 * (1.0 + 7.0 / 24.0));
  j.parallelism.microbatch_group = 0;
  // Fewer micro-batches than stages.
  j.parallelism.virtual_pipeline = 1;
  j.global_batch_size = 24 * 4;
  EXPECT_DOUBLE_EQ(in_flight_microbatches(j, 0), 4.0);
}

TEST(Memory, ModelStateBytesPerParameter) {
  JobSpec j = testing::gpt3_job();
  j.parallelism.zero_stage = 0;
  const MemoryOptions o;
  const MemoryBreakdown b0 = memory_per_gpu(j, 3, o);  // a middle stage: 12 layers only
  const ParameterCount c = count_parameters(j.model);
  const int64_t params = 12 * ((c.layer.attention + c.layer.dense_mlp) / 8 + c.layer.norms);
  EXPECT_EQ(b0.parameters, params);
  EXPECT_EQ(b0.weights, 2 * params);
  EXPECT_EQ(b0.gradients, 4 * params);
  EXPECT_EQ(b0.optimizer, 12 * params);  // 18 bytes/param without ZeRO
  EXPECT_EQ(b0.embedding_buffers, 0);
  EXPECT_EQ(b0.logits_buffers, 0);

  const double d = 24;
  j.parallelism.zero_stage = 1;
  const MemoryBreakdown b1 = memory_per_gpu(j, 3, o);
  EXPECT_EQ(b1.optimizer, std::llround(12 * static_cast<double>(params) / d));
  EXPECT_EQ(b1.gradients, 4 * params);
  j.parallelism.zero_stage = 2;
  const MemoryBreakdown b2 = memory_per_gpu(j, 3, o);
  EXPECT_EQ(b2.gradients, std::llround(4 * static_cast<double>(params) / d));
  EXPECT_EQ(b2.weights, 2 * params);
  j.parallelism.zero_stage = 3;
  const MemoryBreakdown b3 = memory_per_gpu(j, 3, o);
  EXPECT_EQ(b3.weights, std::llround(2 * static_cast<double>(params) / d));
  EXPECT_GT(b3.temporary, b2.temporary);  // ZeRO-3 prefetch buffers
}

TEST(Memory, FirstStageTotalAndFits) {
  const JobSpec j = testing::gpt3_job();  // selective recompute, ZeRO-1
  MemoryOptions o;
  o.capacity_bytes = 80 * kGiB;
  const MemoryBreakdown b = memory_per_gpu(j, 0, o);
  const int64_t per_layer = activation_bytes_per_layer(j, Recompute::selective);
  const int64_t working = activation_bytes_per_layer(j, Recompute::none) - per_layer;
  EXPECT_EQ(b.activations, 8 * 12 * per_layer + working);
  EXPECT_GT(b.embedding_buffers, 0);
  EXPECT_EQ(b.logits_buffers, 0);
  EXPECT_EQ(b.allocated, b.weights + b.gradients + b.optimizer + b.activations + b.embedding_buffers +
                             b.logits_buffers + b.temporary);
  const int64_t persistent = b.weights + b.gradients + b.optimizer;  // megatron-core: all persistent
  EXPECT_EQ(b.reserved, persistent + std::llround(static_cast<double>(b.allocated - persistent) * 1.11));
  EXPECT_EQ(b.total, b.reserved + b.cuda_context + b.nccl);
  EXPECT_EQ(b.margin, b.capacity - b.total);
  EXPECT_TRUE(b.fits);
  // GPT-3 on TP 8 x PP 8 is known to fit on 80 GB A100s: well under 80 GiB.
  EXPECT_LT(b.total, 60 * kGiB);
  EXPECT_GT(b.total, 20 * kGiB);

  const MemoryBreakdown last = memory_per_gpu(j, 7, o);
  EXPECT_GT(last.logits_buffers, 0);
  EXPECT_EQ(last.embedding_buffers, 0);
  const MemoryBreakdown peak = peak_memory_per_gpu(j, o);
  EXPECT_GE(peak.total, b.total);
  EXPECT_GE(peak.total, last.total);

  o.capacity_bytes = 16 * kGiB;
  EXPECT_FALSE(memory_per_gpu(j, 0, o).fits);
}

// Between the live tensors and the reserved memory: a step that keeps every activation fits by
// releasing the allocator's cache (reserved held at what the GPU has left); one that discards
// activations for recompute keeps its fragmentation and does not fit (memory.h, 6.).
TEST(Memory, AllocatorReleasesItsCacheOnlyWhenNothingIsDiscarded) {
  JobSpec j = testing::gpt3_job();
  j.recompute_granularity = "none";
  MemoryOptions o;
  o.capacity_bytes = 1024 * kGiB;
  const MemoryBreakdown roomy = memory_per_gpu(j, 0, o);
  EXPECT_FALSE(roomy.allocator_at_capacity);
  ASSERT_GT(roomy.reserved, roomy.allocated);
  // A capacity between the live tensors and the reserved memory (+ context and NCCL).
  const int64_t outside = roomy.cuda_context + roomy.nccl;
  o.capacity_bytes = outside + (roomy.allocated + roomy.reserved) / 2;
  const MemoryBreakdown tight = memory_per_gpu(j, 0, o);
  EXPECT_TRUE(tight.fits);
  EXPECT_TRUE(tight.allocator_at_capacity);
  EXPECT_EQ(tight.allocated, roomy.allocated);
  EXPECT_EQ(tight.reserved, o.capacity_bytes - outside);
  EXPECT_EQ(tight.margin, 0);
  // Below the live tensors: out of memory, the reserved memory as with room.
  o.capacity_bytes = outside + roomy.allocated - 1;
  const MemoryBreakdown short_by = memory_per_gpu(j, 0, o);
  EXPECT_FALSE(short_by.fits);
  EXPECT_FALSE(short_by.allocator_at_capacity);
  EXPECT_EQ(short_by.reserved, roomy.reserved);
  // Full recompute discards activations: the same squeeze does not fit.
  j.recompute_granularity = "full";
  o.capacity_bytes = 1024 * kGiB;
  const MemoryBreakdown full = memory_per_gpu(j, 0, o);
  o.capacity_bytes = outside + (full.allocated + full.reserved) / 2;
  const MemoryBreakdown full_tight = memory_per_gpu(j, 0, o);
  EXPECT_FALSE(full_tight.fits);
  EXPECT_FALSE(full_tight.allocator_at_capacity);
  EXPECT_EQ(full_tight.reserved, full.reserved);
  // A stack that allocates its gradients in the backward (pytorch) keeps its fragmentation too.
  j.recompute_granularity = "none";
  j.stack = "pytorch";
  o.capacity_bytes = 1024 * kGiB;
  const MemoryBreakdown eager = memory_per_gpu(j, 0, o);
  o.capacity_bytes = eager.cuda_context + eager.nccl + (eager.allocated + eager.reserved) / 2;
  EXPECT_FALSE(memory_per_gpu(j, 0, o).fits);
}

// Transformer Engine's fused cross entropy: 2 bytes per logit at the peak (the gradient in place
// in the bf16 logits, TE 2.2-2.17) against native's 6; TE 2.18's fp32 gradient is 6 again.
TEST(Memory, TeCrossEntropyKeepsTheGradientInTheLogits) {
  JobSpec j = testing::gpt3_job();
  const MemoryOptions o;
  const int last = j.parallelism.pipeline_parallel - 1;
  const MemoryBreakdown native = memory_per_gpu(j, last, o);
  j.te_cross_entropy = JobSpec::TeCrossEntropy::in_place;
  const MemoryBreakdown te = memory_per_gpu(j, last, o);
  j.te_cross_entropy = JobSpec::TeCrossEntropy::fp32_grad;
  const MemoryBreakdown te218 = memory_per_gpu(j, last, o);
  const double logits = static_cast<double>(j.micro_batch_size) * static_cast<double>(j.model.seq_length) *
                        static_cast<double>(j.model.vocab) /
                        static_cast<double>(j.parallelism.tensor_parallel);
  EXPECT_NEAR(static_cast<double>(native.logits_buffers - te.logits_buffers), 4.0 * logits, 2.0);
  EXPECT_EQ(te218.logits_buffers, native.logits_buffers);
}

TEST(Memory, TiedEmbeddingsCopiedToLastStage) {
  JobSpec j = testing::gpt3_job();
  const StageParameters first = stage_parameters(j, 0);
  const StageParameters last = stage_parameters(j, 7);
  const StageParameters middle = stage_parameters(j, 3);
  EXPECT_EQ(first.dense - middle.dense, 51200 * 12288 / 8 + 2048 * 12288);
  EXPECT_EQ(last.dense - middle.dense, 51200 * 12288 / 8 + 2 * 12288);
  j.parallelism.pipeline_parallel = 1;
  j.parallelism.data_parallel = 192;
  const StageParameters only = stage_parameters(j, 0);
  EXPECT_EQ(only.dense, 8 * middle.dense + 51200 * 12288 / 8 + 2048 * 12288 + 2 * 12288);
}

// The experts keep their permuted input tokens (2 h bytes per routed copy). Megatron's dispatcher
// routes each TP rank's sequence shard, and expert tensor parallelism all-gathers etp shards
// after the all-to-all: a GPU's experts hold tokens x top_k x etp / t copies. Folded (etp 1
// under TP 2) they hold half what unfolded experts (etp = t) hold; the experts' intermediate
// (tokens x etp / t copies of width fe / etp) is the same either way.
TEST(Memory, FoldedExpertsKeepTheirShardOfThePermutedTokens) {
  JobSpec j = testing::gpt3_job();
  j.model = testing::mixtral_8x7b();  // h 4096, top 2, s 4096
  j.parallelism.tensor_parallel = 2;
  j.parallelism.sequence_parallel = true;
  j.parallelism.expert_parallel = 8;
  j.parallelism.expert_tensor_parallel = 2;
  const double unfolded = static_cast<double>(activation_bytes_per_layer(j, Recompute::none));
  j.parallelism.expert_tensor_parallel = 1;
  const double folded = static_cast<double>(activation_bytes_per_layer(j, Recompute::none));
  const double tokens = 4096, h = 4096, top_k = 2;
  EXPECT_NEAR(unfolded - folded, tokens * 2.0 * h * top_k * (2.0 / 2.0 - 1.0 / 2.0), 1.0);
  // Without TP the two are one layout.
  j.parallelism.tensor_parallel = 1;
  const double alone = static_cast<double>(activation_bytes_per_layer(j, Recompute::none));
  j.parallelism.expert_tensor_parallel = 0;  // unset: = TP
  EXPECT_EQ(static_cast<double>(activation_bytes_per_layer(j, Recompute::none)), alone);
}

// The routed copies of the tokens are the experts' first GEMM's input: kept as its saved input,
// 2 bytes per element in bf16 and Transformer Engine's FP8 copy (1 byte) under FP8, as every other
// linear input. One more expert per token adds that copy and the expert's SwiGLU internals (its
// fc1 output, 4 bytes per width, and fc2's saved input, 2 or 1).
TEST(Memory, RoutedTokensAreKeptAsTheExpertGemmsSavedInput) {
  JobSpec j = testing::gpt3_job();
  j.model = testing::mixtral_8x7b();  // h 4096, expert width 14336, s 4096
  j.stack = "megatron-core";
  j.parallelism.tensor_parallel = 1;
  j.parallelism.expert_parallel = 8;
  const double tokens = 4096, h = 4096, f = 14336;
  for (const auto& [precision, qb] : {std::pair{"bf16", 2.0}, std::pair{"fp8", 1.0}}) {
    j.precision = precision;
    j.model.moe.top_k = 2;
    const double two = static_cast<double>(activation_bytes_per_layer(j, Recompute::none));
    j.model.moe.top_k = 3;
    const double three = static_cast<double>(activation_bytes_per_layer(j, Recompute::none));
    EXPECT_NEAR(three - two, tokens * (qb * h + (4.0 + qb) * f), 1.0) << precision;
  }
}

TEST(Memory, ExpertWeightsSplitByEp) {
  JobSpec j;
  j.model = testing::mixtral_8x7b();
  j.parallelism.tensor_parallel = 2;
  j.parallelism.pipeline_parallel = 4;
  j.parallelism.data_parallel = 8;
  j.parallelism.expert_parallel = 8;
  j.global_batch_size = 64;
  const StageParameters s = stage_parameters(j, 1);
  EXPECT_EQ(s.expert, 8 * 8 * 3LL * 4096 * 14336 / (8 * 2));
  const MemoryBreakdown b = memory_per_gpu(j, 1, MemoryOptions{});
  // ZeRO-1: expert optimizer state shards over DP x CP / EP = 1, dense over 8.
  EXPECT_EQ(b.optimizer,
            std::llround(12.0 * static_cast<double>(s.dense) / 8.0 + 12.0 * static_cast<double>(s.expert)));
}

}  // namespace
}  // namespace ct::workload

namespace ct::workload {
namespace {

TEST(Memory, BlockRecomputeSitsBetweenNoneAndFull) {
  JobSpec j = testing::gpt3_job();  // p 8, 12 layers per stage
  j.recompute_granularity = "full";
  const MemoryOptions o;
  const int64_t all = memory_per_gpu(j, 0, o).activations;
  j.recompute_layers = 4;  // 4 of the stage's 12 layers recompute, 8 keep everything
  const int64_t some = memory_per_gpu(j, 0, o).activations;
  j.recompute_layers = 12;
  EXPECT_EQ(memory_per_gpu(j, 0, o).activations, all);
  j.recompute_layers = 0;
  j.recompute_granularity = "none";
  const int64_t none = memory_per_gpu(j, 0, o).activations;
  EXPECT_LT(all, some);
  EXPECT_LT(some, none);
  // 8 micro-batches in flight on stage 0: 8 x (4 full-recompute layers + 8 complete layers).
  j.recompute_granularity = "full";
  const double full_layer = static_cast<double>(activation_bytes_per_layer(j, Recompute::none));
  const double input = static_cast<double>(activation_bytes_per_layer(j, Recompute::full));
  EXPECT_NEAR(static_cast<double>(some),
              8.0 * (4.0 * input + 8.0 * full_layer) + (full_layer - (4.0 * input + 8.0 * full_layer) / 12.0),
              64.0);
  j.recompute_layers = 4;
  EXPECT_EQ(recomputed_layers_in_stage(j, 0), 4);
  EXPECT_NEAR(recomputed_layer_fraction(j), 1.0 / 3.0, 1e-12);
}

TEST(Memory, RecomputeLayersNeedsFullGranularity) {
  JobSpec j = testing::gpt3_job();
  j.recompute_layers = 2;  // selective
  EXPECT_THROW(validate(j, 1536), std::invalid_argument);
  j.recompute_granularity = "full";
  EXPECT_NO_THROW(validate(j, 1536));
}

}  // namespace
}  // namespace ct::workload

namespace ct::workload {
namespace {

TEST(Memory, HybridShardingShardsOverTheGroupOnly) {
  JobSpec j = testing::gpt3_job();  // DP 24
  j.parallelism.zero_stage = 3;
  const MemoryOptions o;
  const MemoryBreakdown full = memory_per_gpu(j, 3, o);
  j.parallelism.shard_size = 8;
  validate(j, 1536);
  const MemoryBreakdown hsdp = memory_per_gpu(j, 3, o);
  EXPECT_NEAR(static_cast<double>(hsdp.optimizer), 3.0 * static_cast<double>(full.optimizer), 4.0);
  EXPECT_NEAR(static_cast<double>(hsdp.weights), 3.0 * static_cast<double>(full.weights), 4.0);
  j.parallelism.shard_size = 5;  // does not divide DP 24
  EXPECT_THROW(validate(j, 1536), std::invalid_argument);
  j.parallelism.shard_size = 8;
  j.parallelism.zero_stage = 0;
  EXPECT_THROW(validate(j, 1536), std::invalid_argument);
}

}  // namespace
}  // namespace ct::workload

namespace ct::workload {
namespace {

// fp8 (Transformer Engine): cached FP8 weights and transposes, 2 bytes per matmul parameter;
// linear layers keep FP8 inputs, so activations shrink. torchao's float8 (torchtitan) does
// neither. nemo keeps bf16 gradient buffers.
TEST(Memory, Fp8AndNemoConventions) {
  JobSpec j = testing::gpt3_job();
  const MemoryOptions o;
  const MemoryBreakdown bf16 = memory_per_gpu(j, 3, o);
  j.precision = "fp8";
  const MemoryBreakdown fp8 = memory_per_gpu(j, 3, o);
  const LayerParameters L = layer_parameters(j.model);
  EXPECT_EQ(fp8.weights - bf16.weights, 2 * 12 * ((L.attention + L.dense_mlp) / 8));
  EXPECT_LT(fp8.activations, bf16.activations);
  j.stack = "torchtitan";
  const MemoryBreakdown ao = memory_per_gpu(j, 3, o);
  j.precision = "bf16";
  EXPECT_EQ(ao.weights, memory_per_gpu(j, 3, o).weights);
  EXPECT_EQ(ao.activations, memory_per_gpu(j, 3, o).activations);
  j.stack = "nemo";
  EXPECT_EQ(2 * memory_per_gpu(j, 3, o).gradients, bf16.gradients);
  // ZeRO-3 / FSDP shards the FP8 copies like the weights (fp8_param_gather).
  j.precision = "fp8";
  j.parallelism.zero_stage = 3;
  const MemoryBreakdown z3_fp8 = memory_per_gpu(j, 3, o);
  j.precision = "bf16";
  const MemoryBreakdown z3_bf16 = memory_per_gpu(j, 3, o);
  const double shard = static_cast<double>(zero_shard_degree(j.parallelism));
  EXPECT_NEAR(static_cast<double>(z3_fp8.weights - z3_bf16.weights),
              2.0 * 12 * static_cast<double>((L.attention + L.dense_mlp) / 8) / shard, 2.0);
}

}  // namespace
}  // namespace ct::workload

namespace ct::workload {
namespace {

// nvfp4 (Transformer Engine NVFP4BlockScaling): the saved GEMM inputs and cached weight copies
// are 0.5625 bytes per element (E2M1 + one E4M3 scale per 16) where FP8's are 1. Per token and
// layer, without TP: the two norm outputs (2h), the projection's copy beside the attention
// output (h) and the MLP-out input (f = 4h) each save 0.4375 bytes per element against FP8.
// Weights: a row-wise and a column-wise copy, 1.125 bytes per linear parameter (FP8: 2); as
// primary weights (fp8_params, Megatron-Bridge's fp4_param_gather) those replace the bf16 copy,
// 0.875 bytes per linear parameter below bf16.
TEST(Memory, Nvfp4SavesAndCachesHalfByteCopies) {
  JobSpec j = testing::gpt3_job();
  j.parallelism.tensor_parallel = 1;
  j.precision = "fp8";
  const int64_t fp8 = activation_bytes_per_layer(j, Recompute::none);
  j.precision = "nvfp4";
  const int64_t fp4 = activation_bytes_per_layer(j, Recompute::none);
  const double h = 12288, tokens = 2048;
  EXPECT_NEAR(static_cast<double>(fp8 - fp4), 0.4375 * tokens * 7.0 * h, 2.0);

  auto weights = [](const char* precision, bool primary) {
    JobSpec k = testing::gpt3_job();
    k.precision = precision;
    k.fp8_params = primary;
    return static_cast<double>(memory_per_gpu(k, 3, MemoryOptions{}).weights);
  };
  const LayerParameters L = layer_parameters(j.model);
  const double linear = 12.0 * static_cast<double>((L.attention + L.dense_mlp) / 8);
  EXPECT_NEAR(weights("nvfp4", false) - weights("bf16", false), 1.125 * linear, 2.0);
  EXPECT_NEAR(weights("nvfp4", true) - weights("bf16", false), -0.875 * linear, 2.0);
  EXPECT_EQ(weights("fp8", true), weights("bf16", false));  // FP8 primary weights: 1 + 1 for 2
}

}  // namespace
}  // namespace ct::workload
