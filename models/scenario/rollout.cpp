#include "models/scenario/rollout.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "models/scenario/loader.h"
#include "models/scenario/runner.h"

namespace ct::scenario {

nlohmann::json rollout(const Config& base) {
  if (!base.has("training_job")) throw ScenarioError({"rollout: the scenario needs a training_job"});
  const auto& par = base.training_job.parallelism;
  const int64_t replica_gpus = int64_t{par.tensor_parallel} * par.pipeline_parallel * par.context_parallel;
  const int64_t per_replica_batch = base.training_job.global_batch_size / par.data_parallel;
  const int gpn = base.cluster.gpus_per_node;
  const int64_t rail_group_nodes = base.cluster.fabric.switch_radix / 2;  // leaf downlinks at 1:1
  const int64_t pod_nodes =
      rail_group_nodes * base.cluster.fabric.switch_radix / 2 / base.cluster.nics_per_node;
  std::set<int64_t> dps{1, par.data_parallel};
  for (const int64_t nodes : {rail_group_nodes, pod_nodes}) {
    const int64_t dp = nodes * gpn / replica_gpus;
    if (dp >= 1 && dp < par.data_parallel) dps.insert(dp);
  }
  nlohmann::json stages = nlohmann::json::array();
  double first_per_gpu = 0, prev_tokens = 0, worst = 1.0;
  int64_t prev_gpus = 0;
  for (const int64_t dp : dps) {
    Config c = base;
    c.training_job.parallelism.data_parallel = static_cast<int>(dp);
    c.training_job.global_batch_size = per_replica_batch * dp;
    c.faults.clear();
    nlohmann::json row = {
        {"data_parallel", dp}, {"gpus", dp * replica_gpus}, {"nodes", (dp * replica_gpus + gpn - 1) / gpn}};
    if (std::string why = step_not_computed(c); !why.empty()) {
      row["error"] = why;
      stages.push_back(row);
      continue;
    }
    const replay::StepResult r = simulate_training_step(c);
    const double tokens = r.tokens_per_s, per_gpu = r.tokens_per_s_per_gpu;
    if (first_per_gpu == 0) first_per_gpu = per_gpu;
    row["step_time_s"] = r.step_time_s;
    row["mfu"] = r.mfu;
    row["tokens_per_s"] = tokens;
    row["scaling_efficiency"] = per_gpu / first_per_gpu;
    if (prev_gpus > 0) {
      const double doublings =
          std::log2(static_cast<double>(dp * replica_gpus) / static_cast<double>(prev_gpus));
      const double gain = std::pow(2.0, std::log2(tokens / prev_tokens) / doublings) - 1.0;
      row["doubling_gain"] = gain;
      worst = std::min(worst, gain);
    }
    prev_tokens = tokens;
    prev_gpus = dp * replica_gpus;
    stages.push_back(row);
  }
  return {{"stages", stages}, {"worst_doubling_gain", worst}, {"linear_enough", worst >= 0.85}};
}

}  // namespace ct::scenario
