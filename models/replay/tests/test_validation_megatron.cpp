// Validation against Megatron-LM (Narayanan et al., SC'21) Table 1: ten GPT configurations
// on A100-80GB (Selene), 32 to 3,072 GPUs. One model, no per-row constants: each row runs the
// micro-batch size and interleaving depth of the paper's artifact (Megatron-LM
// examples/sc21/run_table_1.sh; the rows' micro_batch / virtual_pipeline), which must fit in
// memory. The paper's TFLOP/s count recompute: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per
// iteration.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/hardware/gpu_catalog.h"
#include "models/replay/step_model.h"
#include "models/replay/tests/fixtures.h"
#include "models/workload/flops.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"

using namespace ct;
using namespace ct::replay;
using ct::replay::testing::selene;

namespace {

struct Prediction {
  double tflops = 0;
  int64_t micro_batch = 0;
  int chunks = 0;
};

Prediction predict(const nlohmann::json& row) {
  const int gpus = row["gpus"], tp = row["tp"], pp = row["pp"], layers = row["layers"];
  const int64_t gbs = row["global_batch"], hidden = row["hidden"];
  workload::JobSpec job;
  job.model.layers = layers;
  job.model.hidden = hidden;
  job.model.heads = row["heads"];
  job.model.seq_length = 2048;
  job.model.vocab = 51200;
  job.parallelism.tensor_parallel = tp;
  job.parallelism.pipeline_parallel = pp;
  job.parallelism.data_parallel = gpus / (tp * pp);
  job.parallelism.zero_stage = 0;  // SC'21 Megatron: plain DP all-reduce
  job.global_batch_size = gbs;
  job.recompute_granularity = "full";
  job.attention = "unfused";  // 2021: no FlashAttention; scores and probabilities in HBM
  // --fp16 of 2021: 16-bit gradients accumulated in .grad, all-reduced in fp16 (no fp32
  // accumulation; gradient accumulation fusion came in Feb 2022)
  job.grad_reduce_bytes = 2;
  job.gradient_accumulation_fusion = false;
  const auto cluster = selene(gpus);
  const double flops = workload::megatron_flops_per_iteration(gbs, 2048, layers, hidden, 51200, true);
  job.micro_batch_size = row["micro_batch"].get<int64_t>();
  job.parallelism.virtual_pipeline = row["virtual_pipeline"].get<int>();
  workload::MemoryOptions mem;
  mem.capacity_bytes = static_cast<int64_t>(cluster.node.gpu.hbm_bytes);
  EXPECT_TRUE(workload::peak_memory_per_gpu(job, mem).fits)
      << row["params_b"] << "B: the artifact's layout ran";
  StepInput in;
  in.job = job;
  in.cluster = cluster;
  in.network_mode = "analytical";
  in.program.fold = true;
  in.program.steps = 2;
  // The artifact (examples/sc21/run_table_1.sh): --DDP-impl torch without pipeline parallelism
  // (PyTorch DDP's 25 MB buckets under the last micro-batch's backward), local DDP otherwise
  // (one all-reduce after the backward pass).
  in.program.overlap_grad_reduce = pp == 1;
  if (pp == 1) in.program.bucket_params = 25.0 * 1024 * 1024 / 2.0;
  in.program.overlap_p2p = false;  // SC'21: batched blocking send/recv
  const StepResult r = simulate_step(in);
  return {flops / r.step_time_s / gpus / 1e12, job.micro_batch_size, job.parallelism.virtual_pipeline};
}

}  // namespace

TEST(ValidationMegatronSC21, TableOneWithinStatedError) {
  std::ifstream in("tests/validation/megatron-sc21-table1.json");
  ASSERT_TRUE(in) << "run from the repository root";
  const auto table = nlohmann::json::parse(in);
  double sum_abs = 0, max_abs = 0;
  std::printf("%8s %6s %4s %4s %4s %5s %9s %9s %7s\n", "params", "gpus", "tp", "pp", "mb", "v", "paper",
              "twin", "error");
  for (const auto& row : table["rows"]) {
    const Prediction p = predict(row);
    const double paper = row["tflops_per_gpu"];
    const double error = (p.tflops - paper) / paper;
    sum_abs += std::fabs(error);
    max_abs = std::max(max_abs, std::fabs(error));
    std::printf("%7.1fB %6d %4d %4d %4lld %5d %9.1f %9.1f %+6.1f%%\n", row["params_b"].get<double>(),
                row["gpus"].get<int>(), row["tp"].get<int>(), row["pp"].get<int>(),
                static_cast<long long>(p.micro_batch), p.chunks, paper, p.tflops, 100 * error);
  }
  const double mean_abs = sum_abs / static_cast<double>(table["rows"].size());
  std::printf("mean |error| %.1f%%, max |error| %.1f%%\n", 100 * mean_abs, 100 * max_abs);
  RecordProperty("mean_abs_error", std::to_string(mean_abs));
  // Measured: mean 5.6%, max 12.6% (the 76.1B row), Selene routed by destination (d-mod-k), the
  // artifact's layouts and gradient path (fp16 buffers, unfused accumulation, torch DDP overlap
  // without pipelining; max 11.6% before those: the small models rose from -9% to -3% .. +5%, the
  // 18.4B row to +11%, the 1T row fell to -3%). The interleaved rows (76.1B to 530B, +7% to +12%) are the
  // fast ones; the pipelines without interleaving (39.1B, 1T) are within 3.4%. It was mean 8.3%, max 17.3%
  // (the 1.7B row) while the materialised attention's softmax was costed as torch's softmax rather than
  // Megatron's fused kernel. The goal is 10% / 5%.
  EXPECT_LT(max_abs, 0.19);
  EXPECT_LT(mean_abs, 0.10);
}

// One measured step: a 24-layer, hidden-2048 GPT (1.42B parameters, seq 2048, micro-batch 8,
// bf16 autocast, fused AdamW) on one H200, PyTorch 2.11, unprofiled step 0.3047 s
// (tests/validation/h200-gpt1.4b-step.json, from shared/traces/kineto/trace_meta.json). The
// compute model is calibrated on H200 kernels, so this checks the step assembly end to end.
// The run is eager PyTorch (stack pytorch: autocast casts, fp32 residual stream, the fused
// QKV output's layout copy and its backward cat). Measured: the twin gives 0.2891 s (-5.1%);
// with the megatron-core stack's fused kernels it would be 0.2615 s (-14%). What is still
// left out: the idle gaps between eager launches (13 ms in the unprofiled run), and the
// strided permute / cat copies run at about 1 TB/s in the trace, a third of the streaming
// rate the model gives them.
TEST(ValidationH200Step, OneGpuGptStepWithinStatedError) {
  std::ifstream in("tests/validation/h200-gpt1.4b-step.json");
  ASSERT_TRUE(in);
  const auto meta = nlohmann::json::parse(in);
  const auto& m = meta["model"];
  workload::JobSpec job;
  job.model.layers = m["layers"];
  job.model.hidden = m["hidden"];
  job.model.heads = m["heads"];
  job.model.seq_length = m["seq"];
  job.model.vocab = m["vocab"];
  job.micro_batch_size = m["micro_batch"];
  job.global_batch_size = m["micro_batch"];
  job.parallelism.zero_stage = 0;
  job.recompute_granularity = "none";
  job.stack = "pytorch";
  network::ClusterSpec c = selene(8);
  c.node.gpu = hardware::gpu("H200-SXM");
  c.node.gpus_per_node = 1;
  c.node.nics_per_node = 1;
  c.nodes = 1;
  c.fabric.topology = "rail_optimized";
  c.fabric.tiers = 2;
  c.fabric.switch_radix = 8;
  c.fabric.nodes = 1;
  c.fabric.nics_per_node = 1;
  StepInput input;
  input.job = job;
  input.cluster = c;
  input.network_mode = "analytical";
  const double twin = simulate_step(input).step_time_s;
  const double measured = meta["unprofiled_step_s"];
  std::printf("H200 1.42B GPT step: measured %.4f s, twin %.4f s (%+.1f%%)\n", measured, twin,
              100 * (twin - measured) / measured);
  EXPECT_NEAR(twin, measured, 0.08 * measured);
}
