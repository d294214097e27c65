#include "models/scenario/planner.h"

#include <array>
#include <cmath>
#include <stdexcept>

#include "models/hardware/gpu_catalog.h"
#include "models/replay/step_model.h"
#include "models/scenario/loader.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/parameters.h"

namespace ct::scenario {
namespace {

struct Shape {
  int layers;
  int64_t hidden;
  int heads;
};

// GPT-3 (Brown et al. 2020, Table 2.1) and Megatron (Narayanan et al. 2021, Table 1) shapes.
constexpr std::array kShapes{
    Shape{24, 2048, 16},  Shape{32, 2560, 32},   Shape{32, 4096, 32},    Shape{40, 5120, 40},
    Shape{48, 6144, 48},  Shape{48, 8192, 64},   Shape{60, 10240, 80},   Shape{80, 12288, 96},
    Shape{96, 12288, 96}, Shape{96, 16384, 128}, Shape{105, 20480, 128}, Shape{128, 25600, 160},
};

workload::ModelSpec shape_for(double params, int seq) {
  workload::ModelSpec best;
  double best_gap = 1e300;
  for (const Shape& s : kShapes) {
    workload::ModelSpec m;
    m.layers = s.layers;
    m.hidden = s.hidden;
    m.heads = s.heads;
    m.seq_length = seq;
    m.vocab = 51200;
    const double n = static_cast<double>(workload::total_parameters(m));
    const double gap = std::fabs(std::log(n / params));
    if (gap < best_gap) {
      best_gap = gap;
      best = m;
    }
  }
  return best;
}

network::ClusterSpec cluster_for(const hardware::GpuSpec& gpu, int nodes) {
  network::ClusterSpec c;
  c.node.gpu = gpu;
  c.node.gpus_per_node = 8;
  c.node.nics_per_node = 8;
  c.node.nic_rate = sim::Bandwidth::gbps(400);
  c.node.nvlink_rate = sim::Bandwidth::bytes_per_s(gpu.nvlink_bytes_per_s);
  c.node.nvlink_latency = sim::Duration::us(1);
  c.node.pcie_rate = sim::Bandwidth::bytes_per_s(64e9);
  c.nodes = nodes;
  c.fabric.tiers = nodes * 8 > 8192 ? 3 : 2;
  c.fabric.nodes = nodes;
  c.fabric.nics_per_node = 8;
  c.fabric.link_rate = c.node.nic_rate;
  return c;
}

nlohmann::json search_layout(const workload::ModelSpec& model, const hardware::GpuSpec& gpu, int nodes,
                             double batch_tokens) {
  const int gpus = nodes * 8;
  const auto cluster = cluster_for(gpu, nodes);
  nlohmann::json best = nullptr;
  double best_tokens = 0;
  int evaluated = 0;
  for (const int tp : {1, 2, 4, 8}) {
    if (model.heads % tp) continue;
    for (int pp = 1; pp <= model.layers && pp <= 64; ++pp) {
      // The layout may leave a few GPUs idle (spares): DP is what fits.
      if (model.layers % pp || gpus < tp * pp) continue;
      const int dp = gpus / (tp * pp);
      for (const int64_t mb : {1, 2, 4}) {
        for (const int v : {1, 2, 4}) {
          if (v > 1 && (pp == 1 || model.layers % (pp * v))) continue;
          workload::JobSpec job;
          job.model = model;
          job.parallelism.tensor_parallel = tp;
          job.parallelism.pipeline_parallel = pp;
          job.parallelism.data_parallel = dp;
          job.parallelism.virtual_pipeline = v;
          job.micro_batch_size = mb;
          job.recompute_granularity = "selective";
          int64_t m = std::max<int64_t>(1, std::llround(batch_tokens / static_cast<double>(model.seq_length) /
                                                        static_cast<double>(dp * mb)));
          if (v > 1) m = (m + pp - 1) / pp * pp;
          job.global_batch_size = m * dp * mb;
          workload::MemoryOptions mem;
          mem.capacity_bytes = static_cast<int64_t>(gpu.hbm_bytes);
          if (!workload::peak_memory_per_gpu(job, mem).fits) continue;
          replay::StepInput in;
          in.job = job;
          in.cluster = cluster;
          in.network_mode = "analytical";
          in.program.fold = true;
          in.program.steps = 2;
          const replay::StepResult r = replay::simulate_step(in);
          ++evaluated;
          if (r.tokens_per_s_per_gpu > best_tokens) {
            best_tokens = r.tokens_per_s_per_gpu;
            best = {{"tensor_parallel", tp},
                    {"pipeline_parallel", pp},
                    {"data_parallel", dp},
                    {"virtual_pipeline", v},
                    {"micro_batch_size", mb},
                    {"global_batch_size", job.global_batch_size},
                    {"mfu", r.mfu},
                    {"step_time_s", r.step_time_s},
                    {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu}};
          }
        }
      }
    }
  }
  return {{"best", best}, {"layouts_evaluated", evaluated}};
}

}  // namespace

nlohmann::json plan(const PlanRequest& r) {
  std::vector<std::string> problems;
  if (!(r.params > 0)) problems.push_back("--params: expected a positive parameter count, like 175e9");
  if (!(r.tokens > 0)) problems.push_back("--tokens: expected a positive token count, like 300e9");
  if (!(r.days > 0)) problems.push_back("--days: expected a positive number of days, like 30");
  if (r.seq_length < 1) problems.push_back("--seq: expected a positive sequence length");
  const hardware::GpuSpec* gpu = hardware::find_gpu(r.gpu);
  if (gpu == nullptr) {
    std::string names;
    for (const auto& n : hardware::gpu_names()) names += " " + n;
    problems.push_back("--gpu: got '" + r.gpu + "', expected one of" + names);
  }
  if (!problems.empty()) throw ScenarioError(problems);

  const double flops = 6.0 * r.params * r.tokens;
  const double seconds = r.days * 86400.0;
  nlohmann::json out;
  out["inputs"] = {{"params", r.params}, {"tokens", r.tokens}, {"days", r.days}, {"gpu", r.gpu}};
  out["training_flops"] = flops;
  out["model_state_bytes"] = 16.0 * r.params;
  const std::array<std::pair<const char*, double>, 3> cases{
      {{"optimistic", 0.50}, {"base", 0.40}, {"conservative", 0.30}}};
  int base_nodes = 1;
  for (const auto& [name, mfu] : cases) {
    const double needed = flops / (seconds * gpu->bf16_dense_flops * mfu);
    const int nodes = std::max(1, static_cast<int>(std::ceil(needed / 8.0)));
    const double gpus = nodes * 8.0;
    if (std::string(name) == "base") base_nodes = nodes;
    out["cases"][name] = {{"mfu", mfu},
                          {"gpus", gpus},
                          {"nodes", nodes},
                          {"hbm_bytes", gpus * gpu->hbm_bytes},
                          {"nic_bandwidth_gbps", gpus * 400.0},  // one 400 Gb/s NIC per GPU
                          {"power_w", gpus * gpu->tdp_watts * 1.5}};
  }
  const workload::ModelSpec model = shape_for(r.params, r.seq_length);
  out["model"] = {{"layers", model.layers}, {"hidden", model.hidden},
                  {"heads", model.heads},   {"seq_length", model.seq_length},
                  {"vocab", model.vocab},   {"parameters", workload::total_parameters(model)}};
  if (base_nodes > 8192) {
    out["layout"] = {{"best", nullptr}, {"reason", "more than 65,536 GPUs: the search is not run"}};
  } else {
    out["layout"] = search_layout(model, *gpu, base_nodes, r.batch_tokens);
    if (!out["layout"]["best"].is_null()) {
      const double mfu = out["layout"]["best"]["mfu"];
      out["layout"]["days_at_predicted_mfu"] =
          flops / (base_nodes * 8.0 * gpu->bf16_dense_flops * mfu) / 86400.0;
    }
  }
  return out;
}

}  // namespace ct::scenario
