// ZeRO-3 at fixed global batch (Narayanan et al. SC'21 Table 2, tests/validation/
// sc21-table2-zero3.json): GPT-3 175B and GPT 530B with ZeRO-3 and no model parallelism
// (DeepSpeed inside Megatron-LM) on 384 to 2,240 A100-80GB of Selene, the global batch held
// while the GPUs double, so every GPU computes half as many tokens but still gathers every
// parameter twice and reduce-scatters every gradient once per step. PTD-P rows of the same
// table (TP 8 x PP 12 / 35) run beside them. The paper's TFLOP/s count the recompute forward
// (Eq. 3). The twin builds the steps from the job alone: per-layer all-gathers in forward and
// backward and per-layer reduce-scatters (step_program.h), full recompute, 2021 attention.
// Prints the table (build/models/replay/test_replay --gtest_filter=ValidationZero3*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

struct Row {
  std::string scheme;
  int gpus;
  double paper, twin, memory_gib;
  bool fits;
  double modern = 0, fsdp2 = 0;  // the same ZeRO-3 row on deepspeed v0.6+ and on FSDP2
};

Row predict(const nlohmann::json& row, const std::string& zero3_stack = "deepspeed-2021",
            int gpus_override = 0) {
  const auto& m = row["model"];
  workload::JobSpec job;
  job.model.layers = m["layers"];
  job.model.hidden = m["hidden"];
  job.model.heads = m["heads"];
  job.model.seq_length = m["seq_len"];
  job.model.vocab = m["vocab"];
  const int gpus = gpus_override > 0 ? gpus_override : row["num_gpus"].get<int>();
  const int tp = row["tensor_parallel"], pp = row["pipeline_parallel"];
  const bool zero3 = row["scheme"].get<std::string>().rfind("ZeRO-3", 0) == 0;
  job.parallelism.tensor_parallel = tp;
  job.parallelism.pipeline_parallel = pp;
  job.parallelism.data_parallel = gpus / (tp * pp);
  job.parallelism.zero_stage = zero3 ? 3 : 0;
  job.stack = zero3 ? zero3_stack : "megatron-core";  // deepspeed-2021: the DeepSpeed the paper ran
  job.micro_batch_size = row["micro_batch"];
  job.global_batch_size =
      gpus_override > 0 ? int64_t{gpus} * job.micro_batch_size : row["global_batch_sequences"].get<int64_t>();
  job.recompute_granularity = "full";
  job.attention = "unfused";
  if (!zero3 && job.parallelism.pipeline_parallel > 1) job.parallelism.virtual_pipeline = 1;
  workload::validate(job, gpus);
  StepInput in;
  in.job = job;
  in.cluster = selene(gpus);
  in.network_mode = "analytical";
  in.program.fold = true;
  in.program.steps = 2;
  in.program.overlap_p2p = false;
  in.program.overlap_grad_reduce = zero3;  // PTD-P (2021): all-reduce after the backward pass
  const StepResult r = simulate_step(in);
  const double flops = workload::megatron_flops_per_iteration(
      job.global_batch_size, job.model.seq_length, job.model.layers, job.model.hidden, job.model.vocab, true);
  workload::MemoryOptions mem;
  mem.capacity_bytes = static_cast<int64_t>(in.cluster.node.gpu.hbm_bytes);
  const workload::MemoryBreakdown b = workload::peak_memory_per_gpu(job, mem);
  return {row["scheme"],
          gpus,
          row["throughput_published"]["value"].get<double>(),
          flops / r.step_time_s / gpus / 1e12,
          static_cast<double>(b.total) / 1073741824.0,
          b.fits};
}

}  // namespace

TEST(ValidationZero3, FixedBatchScalingFollowsTheTable) {
  std::ifstream in("tests/validation/sc21-table2-zero3.json");
  ASSERT_TRUE(in) << "run from the repository root";
  const auto table = nlohmann::json::parse(in);
  std::printf("%-36s %-10s %6s %9s %9s %7s %9s\n", "scheme", "model", "gpus", "paper", "twin", "error",
              "mem GiB");
  double sum = 0, worst = 0, sum_z3 = 0, worst_z3 = 0;
  int n = 0, n_z3 = 0;
  std::map<std::string, std::vector<Row>> series;
  for (const auto& row : table["rows"]) {
    Row r = predict(row);
    if (r.scheme.rfind("ZeRO-3", 0) == 0) {
      r.modern = predict(row, "deepspeed").twin;
      r.fsdp2 = predict(row, "torchtitan").twin;
    }
    const double error = (r.twin - r.paper) / r.paper;
    const std::string model = row["model"]["name"];
    std::printf("%-36s %-10s %6d %9.1f %9.1f %+6.1f%% %9.1f%s", r.scheme.c_str(), model.c_str(), r.gpus,
                r.paper, r.twin, 100 * error, r.memory_gib, r.fits ? "" : " (does not fit)");
    if (r.modern > 0) std::printf("   deepspeed v0.6+ %.1f, FSDP2 %.1f", r.modern, r.fsdp2);
    std::printf("\n");
    EXPECT_TRUE(r.fits) << r.scheme << " " << model << " on " << r.gpus << " GPUs ran";
    const bool zero3_row = r.scheme.rfind("ZeRO-3", 0) == 0;
    (zero3_row ? sum_z3 : sum) += std::fabs(error);
    (zero3_row ? worst_z3 : worst) = std::max(zero3_row ? worst_z3 : worst, std::fabs(error));
    ++(zero3_row ? n_z3 : n);
    series[r.scheme + " " + model].push_back(r);
  }
  std::printf("PTD-P mean |error| %.1f%%, worst %.1f%%; ZeRO-3 mean %.1f%%, worst %.1f%%\n", 100 * sum / n,
              100 * worst, 100 * sum_z3 / n_z3, 100 * worst_z3);
  // The trend: ZeRO-3 per-GPU throughput falls by about half per doubling at fixed batch
  // (paper 144 -> 88 -> 44 and 98 -> 48); PTD-P stays within 10%.
  for (const auto& [name, rows] : series) {
    const bool zero3 = name.rfind("ZeRO-3", 0) == 0;
    for (size_t i = 1; i < rows.size(); ++i) {
      if (rows[i].gpus != 2 * rows[i - 1].gpus) continue;
      const double paper = rows[i].paper / rows[i - 1].paper, twin = rows[i].twin / rows[i - 1].twin;
      std::printf("%s: %d -> %d GPUs, per-GPU TFLOP/s x%.2f paper, x%.2f twin\n", name.c_str(),
                  rows[i - 1].gpus, rows[i].gpus, paper, twin);
      if (zero3) {
        EXPECT_LT(twin, 0.75) << name;  // falls by about half (paper x0.49-0.61)
      } else {
        EXPECT_GT(twin, 0.85) << name;
      }
    }
  }
  // Measured (Selene routed as InfiniBand routes, destination-mod-k): PTD-P mean 6.3%, worst
  // +9.6%. ZeRO-3 rows: mean 20.4%, worst +43.8% (530B on 2,240 GPUs); per doubling the 175B
  // rows fall x0.70 / x0.44 (paper x0.61 / x0.50), 530B x0.53 (paper x0.49). What closed most
  // of the gap (mean 65.4%, worst +128% before): PyTorch 1.8's list-API all_gather /
  // reduce_scatter, through which DeepSpeed 2021 gathered and reduced every tensor, copies each
  // rank's slice out of (into) a flat buffer with one eager copy per rank, and each gather
  // zeroes its full buffer first (workload/sharding.h); at the calibration's 10.3 us per small
  // copy that is 16 ms per collective on 1,536 ranks, about 1,500 collectives a step. Still
  // missing, suspected: DeepSpeed's own Python loops over the ranks around each collective
  // (a narrow view and torch.distributed.get_rank per rank), not measured, so not charged; the
  // 530B rows keep 17-40% over. History: a ring step once paid the worst hop's latency at every
  // hop; with the mean hop (NCCL's own latency model gives the same 4.7 us per step) and
  // destination routing the per-rank copies were the gap. Without the 2021 DeepSpeed mechanics
  // (deepspeed v0.6+ or FSDP2 plans) the same rows come out 1.3x to 4x faster.
  EXPECT_LT(sum / n, 0.10);
  EXPECT_LT(worst, 0.20);
  EXPECT_LT(sum_z3 / n_z3, 0.25);
  EXPECT_LT(worst_z3, 0.50);
  // Sec. 5.2: the 530B model with ZeRO-3 at micro-batch 4 did not fit on 560 GPUs (hence 640).
  for (const auto& row : table["rows"]) {
    if (row["num_gpus"] == 640) {
      const Row r = predict(row, "deepspeed-2021", 560);
      std::printf("530B ZeRO-3 micro-batch 4 on 560 GPUs: %.1f GiB per GPU (the paper: did not fit)\n",
                  r.memory_gib);
      EXPECT_FALSE(r.fits);
    }
  }
}
