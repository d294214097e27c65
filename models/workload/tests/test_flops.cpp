#include <gtest/gtest.h>

#include "models/workload/flops.h"
#include "models/workload/parameters.h"
#include "models/workload/tests/configs.h"

namespace ct::workload {
namespace {

// Megatron SC'21 Table 1, row "145.6B": B 2304, s 2048, l 80, h 12288, V 51200.
// By hand: 96 B s l h^2 = 96 x 2304 x 2048 x 80 x 12288^2 = 5 471 873 547 255 152 640;
// bracket 1 + 2048/73728 + 51200/15728640 = 1 + 1/36 + 0.0032552083 = 1.0310329861;
// product 5.641682e18 FLOPs per iteration (24.8 s at the row's 148 TFLOP/s x 1536 GPUs).
TEST(Flops, MegatronTable1Row) {
  const double f = megatron_flops_per_iteration(2304, 2048, 80, 12288, 51200, true);
  EXPECT_NEAR(f, 5.471873547255152640e18 * 1.0310329861111111, 1e-9 * f);
  EXPECT_NEAR(f / (1536 * 148e12), 24.8, 0.05);
  const double no_recompute = megatron_flops_per_iteration(2304, 2048, 80, 12288, 51200, false);
  EXPECT_DOUBLE_EQ(no_recompute / f, 0.75);
}

ModelSpec table1_145b() {
  ModelSpec m;
  m.layers = 80;
  m.hidden = 12288;
  m.heads = 96;
  m.seq_length = 2048;
  m.vocab = 51200;
  return m;
}

JobSpec job_of(const ModelSpec& m, int64_t batch, const char* recompute) {
  JobSpec j;
  j.model = m;
  j.global_batch_size = batch;
  j.recompute_granularity = recompute;
  return j;
}

// Full recompute HFU FLOPs = 96 l h^2 + 16 l h s + 6 V h per token: Megatron's Eq. 3 exactly.
TEST(Flops, HardwareFlopsWithFullRecomputeEqualMegatronEq3) {
  const JobSpec j = job_of(table1_145b(), 2304, "full");
  const double megatron = megatron_flops_per_iteration(2304, 2048, 80, 12288, 51200, true);
  EXPECT_NEAR(hardware_flops_per_iteration(j), megatron, 1e-12 * megatron);
}

// Model FLOPs (no recompute) vs the 72-factor form: the latter counts the logits GEMM as
// 4.5 B s h V instead of 6 B s h V; the gap is 1.5 V / (72 l h + 12 l s) ~ 0.1%.
TEST(Flops, ModelFlopsMatchThe72FactorForm) {
  const ModelSpec m = table1_145b();
  const JobSpec j = job_of(m, 2304, "none");
  const double f72 = megatron_flops_per_iteration(2304, 2048, 80, 12288, 51200, false);
  const double ours = model_flops_per_iteration(j);
  EXPECT_NEAR(ours, f72, 0.002 * f72);
  const double logits_gap = 1.5 * 2304.0 * 2048.0 * 12288.0 * 51200.0;
  EXPECT_NEAR(ours - f72, logits_gap, 1e-6 * logits_gap);
  EXPECT_DOUBLE_EQ(hardware_flops_per_iteration(j), ours);
}

TEST(Flops, PalmPerTokenForm) {
  const ModelSpec m = testing::gpt3_175b();
  const ParameterCount c = count_parameters(m);
  const double attention = 12.0 * 96 * 12288 * 2048;
  EXPECT_DOUBLE_EQ(model_flops_per_token(m), 6.0 * static_cast<double>(c.matmul_active) + attention);
  EXPECT_DOUBLE_EQ(model_flops_per_token(m) - model_flops_per_token(m, true), attention / 2);
  // 6N with N the non-embedding parameters is within 1% of the matmul count for GPT-3.
  EXPECT_NEAR(static_cast<double>(c.matmul_active), static_cast<double>(c.non_embedding),
              0.01 * static_cast<double>(c.non_embedding));
}

TEST(Flops, SelectiveRecomputeAddsTheAttentionCoreForward) {
  const ModelSpec m = testing::gpt3_175b();
  EXPECT_DOUBLE_EQ(recompute_flops_per_token(m, Recompute::selective), 4.0 * 96 * 12288 * 2048);
  EXPECT_DOUBLE_EQ(recompute_flops_per_token(m, Recompute::none), 0.0);
  EXPECT_DOUBLE_EQ(hardware_flops_per_token(m, Recompute::selective),
                   model_flops_per_token(m) + 4.0 * 96 * 12288 * 2048);
}

TEST(Flops, MoeCountsOnlyActiveExperts) {
  const ModelSpec m = testing::mixtral_8x7b();
  const ParameterCount c = count_parameters(m);
  // Active matmul parameters: attention 2h^2 + 2h kv, 2 experts of 3 h f, router h E; logits.
  const int64_t h = 4096;
  const int64_t per_layer = 2 * h * h + 2 * h * 1024 + 2 * 3 * h * 14336 + h * 8;
  EXPECT_EQ(c.matmul_active, 32 * per_layer + 32000 * h);
  EXPECT_DOUBLE_EQ(model_flops_per_token(m),
                   6.0 * static_cast<double>(c.matmul_active) + 12.0 * 32 * 4096 * 4096);
}

}  // namespace
}  // namespace ct::workload
