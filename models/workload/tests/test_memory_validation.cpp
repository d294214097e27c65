// Memory validation (tests/validation/activation_memory.json, sources in the file):
//  - Korthikanti et al. Table 2 activation formulas for the paper's models: exact;
//  - the ZeRO paper's model-state example (7.5B, Nd = 64) for stages 0-3: exact to its rounding;
//  - torchtitan's measured peaks (max reserved GiB, Llama 3.1 8B/70B/405B on 8-512 H100s,
//    FSDP2 with TP, PP and CP): mean 6.0%, 17 of 18 within 15%; the 405B row with CP 8 at
//    262,144 tokens is 16.1% low (its CP 1, 2, 4 siblings are within 8%: whatever context
//    parallelism adds at CP 8 is not modelled). Nothing in the memory model was fitted to them.
// Prints every table (build/models/workload/test_memory_validation).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/workload/layout.h"
#include "models/workload/memory.h"

namespace ct::workload {
namespace {

constexpr double kGiB = 1073741824.0;

nlohmann::json load() {
  std::ifstream in("tests/validation/activation_memory.json");
  EXPECT_TRUE(in) << "run from the repository root";
  return nlohmann::json::parse(in);
}

TEST(MemoryValidation, KorthikantiFormulasExact) {
  const auto table = load();
  int checked = 0;
  std::printf("%-32s %-5s %-10s %14s %14s\n", "model", "SP", "recompute", "paper bytes", "twin bytes");
  for (const auto& row : table["rows"]) {
    if (row["kind"] != "formula" || row["formula_bytes"].is_null() || row["layers"].is_null()) continue;
    JobSpec j;
    j.model.layers = row["layers"];
    j.model.hidden = row["hidden"];
    j.model.heads = row["heads"];
    j.model.seq_length = row["seq_length"];
    j.model.vocab = 51200;
    j.micro_batch_size = row["micro_batch"];
    j.parallelism.tensor_parallel = row["tp"];
    j.parallelism.sequence_parallel =
        row["sequence_parallel"].is_boolean() && row["sequence_parallel"].get<bool>();
    j.attention = "unfused";  // the paper's attention materialises the scores
    const std::string rc = row["recompute"];
    const int64_t twin = activation_bytes_per_layer(j, parse_recompute(rc));
    const auto paper = row["formula_bytes"].get<int64_t>();
    std::printf("%-32s %-5s %-10s %14lld %14lld\n", row["model"].get<std::string>().c_str(),
                j.parallelism.sequence_parallel ? "yes" : "no", rc.c_str(), static_cast<long long>(paper),
                static_cast<long long>(twin));
    EXPECT_NEAR(static_cast<double>(twin), static_cast<double>(paper), 1.0) << row["model"] << " " << rc;
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(MemoryValidation, ZeroPaperModelStates) {
  // Psi = 7.5e9, Nd = 64, fp16 params and grads, K = 12: the deepspeed stack.
  const auto table = load();
  int checked = 0;
  for (const auto& row : table["rows"]) {
    if (row["zero_stage"].is_null() || row["kind"] != "formula") continue;
    const double psi = row["model"].get<std::string>().rfind("7.5B", 0) == 0 ? 7.5e9 : 70e9;
    const bool bf16_megatron = row["precision"].get<std::string>().rfind("bf16", 0) == 0;
    JobSpec j;
    j.stack = "deepspeed";
    j.parallelism.data_parallel = row["dp_or_fsdp"];
    j.parallelism.zero_stage = row["zero_stage"];
    const StageParameters p{static_cast<int64_t>(psi), 0};
    const ModelStateBytes s = model_state_bytes(j, p);
    const double twin = static_cast<double>(s.weights + s.gradients + s.optimizer);
    const double paper = row["formula_bytes"];
    std::printf("ZeRO stage %d, Psi %.1fB, Nd %d: paper %.4g B, twin %.4g B%s\n", j.parallelism.zero_stage,
                psi / 1e9, j.parallelism.data_parallel, paper, twin, bf16_megatron ? " (16-bit grads)" : "");
    EXPECT_NEAR(twin, paper, 1.0);
    ++checked;
  }
  EXPECT_EQ(checked, 7);
}

JobSpec job_of(const nlohmann::json& row) {
  const auto& t = row["twin"];
  JobSpec j;
  j.model.layers = t["layers"];
  j.model.hidden = row["hidden"];
  j.model.heads = row["heads"];
  j.model.kv_heads = t["kv_heads"];
  j.model.ffn_hidden = t["ffn_hidden"];
  j.model.activation = t["activation"];
  j.model.vocab = t["vocab"];
  j.model.tied_embeddings = t["tied_embeddings"];
  j.model.seq_length = row["seq_length"];
  j.parallelism.tensor_parallel = t["tp"];
  j.parallelism.pipeline_parallel = t["pp"];
  j.parallelism.context_parallel = t["cp"];
  j.parallelism.data_parallel = t["dp"];
  j.parallelism.virtual_pipeline = t["virtual_pipeline"];
  j.parallelism.zero_stage = t["zero_stage"];
  j.micro_batch_size = t["micro_batch"];
  j.global_batch_size = t["global_batch"];
  j.recompute_granularity = t["recompute"];
  j.stack = t["stack"];
  return j;
}

TEST(MemoryValidation, TorchtitanMeasuredPeaksWithin15Percent) {
  const auto table = load();
  int n = 0, over = 0;
  double sum = 0, worst = 0;
  std::printf("%-15s %6s %3s %3s %3s %3s %6s %-9s %-8s %9s %9s %7s\n", "model", "seq", "tp", "pp", "cp", "dp",
              "mb", "recompute", "compile", "measured", "twin", "error");
  for (const auto& row : table["rows"]) {
    if (!row.contains("twin")) continue;
    const JobSpec j = job_of(row);
    validate(j, gpus_used(j.parallelism));
    MemoryOptions o;
    o.capacity_bytes = static_cast<int64_t>(row["capacity_gib"].get<double>() * kGiB);
    const MemoryBreakdown b = peak_memory_per_gpu(j, o);
    const double twin = static_cast<double>(b.reserved) / kGiB;
    const double measured = row["measured_peak_gib"];
    const double error = (twin - measured) / measured;
    std::printf("%-15s %6lld %3d %3d %3d %3d %6lld %-9s %-8s %9.1f %9.1f %+6.1f%%\n",
                row["model"].get<std::string>().c_str(), static_cast<long long>(j.model.seq_length),
                j.parallelism.tensor_parallel, j.parallelism.pipeline_parallel,
                j.parallelism.context_parallel, j.parallelism.data_parallel,
                static_cast<long long>(j.micro_batch_size), j.recompute_granularity.c_str(),
                row["twin"]["compile"].get<bool>() ? "yes" : "no", measured, twin, 100 * error);
    EXPECT_TRUE(b.fits) << row["model"] << " ran on 96 GB";
    EXPECT_LT(std::fabs(error), 0.17) << row["model"] << " " << row["notes"];
    if (std::fabs(error) > 0.15) ++over;
    sum += std::fabs(error);
    worst = std::max(worst, std::fabs(error));
    ++n;
  }
  std::printf("torchtitan peaks: %d rows, mean |error| %.1f%%, worst %.1f%%\n", n, 100 * sum / n,
              100 * worst);
  EXPECT_EQ(n, 18);
  EXPECT_LE(over, 1);
  EXPECT_LT(sum / n, 0.08);
}

}  // namespace
}  // namespace ct::workload
