// Checkpoint bytes per job and per GPU; the maths is in checkpoint.h.
#include "models/storage/checkpoint.h"

#include <algorithm>
#include <stdexcept>

#include "models/workload/memory.h"
#include "models/workload/parameters.h"

namespace ct::storage {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

CheckpointSize checkpoint_size(const workload::JobSpec& job, int gpus_per_node, const CheckpointOptions& o) {
  const workload::ParallelSpec& par = job.parallelism;
  if (par.tensor_parallel < 1 || par.pipeline_parallel < 1 || par.data_parallel < 1 ||
      par.context_parallel < 1 || par.expert_parallel < 1) {
    throw std::invalid_argument("training_job.parallelism: every degree must be at least 1");
  }
  if (gpus_per_node < 1) throw std::invalid_argument("cluster.gpus_per_node must be at least 1");
  const int64_t n = workload::total_parameters(job.model);
  if (n <= 0) throw std::invalid_argument("training_job.model: the model has no parameters");

  CheckpointSize s;
  s.gpus = int64_t{par.tensor_parallel} * par.pipeline_parallel * par.data_parallel * par.context_parallel;
  s.nodes = static_cast<int>(ceil_div(s.gpus, gpus_per_node));
  s.weights_bytes = o.weight_bytes_per_param * n;
  s.optimizer_bytes = o.optimizer_bytes_per_param * n;
  s.extra_bytes = o.extra_bytes_per_gpu * s.gpus;
  s.total_bytes = s.weights_bytes + s.optimizer_bytes + s.extra_bytes;

  const double d = static_cast<double>(par.data_parallel) * par.context_parallel;
  // Expert data parallelism: TP x CP x DP / (EP x ETP) ranks share each expert shard.
  const double d_expert = std::max(1.0, d * workload::expert_shard_ratio(par));
  const bool all_write = o.fully_parallel_save || par.zero_stage >= 1;
  double most = 0.0;
  for (int stage = 0; stage < par.pipeline_parallel; ++stage) {
    const workload::StageParameters p = workload::stage_parameters(job, stage);
    const double owned = static_cast<double>(p.dense + p.expert);
    const double shard = static_cast<double>(p.dense) / d + static_cast<double>(p.expert) / d_expert;
    const auto w = static_cast<double>(o.weight_bytes_per_param);
    const auto opt = static_cast<double>(o.optimizer_bytes_per_param);
    double bytes = 0.0;
    if (o.fully_parallel_save) {
      bytes = (w + opt) * shard;
    } else if (par.zero_stage >= 1) {
      bytes = opt * shard + w * (par.zero_stage >= 3 ? shard : owned);
    } else {
      bytes = (w + opt) * owned;
    }
    most = std::max(most, bytes);
  }
  s.per_gpu_bytes = static_cast<int64_t>(most + 0.5) + o.extra_bytes_per_gpu;

  if (all_write) {
    s.writers = s.gpus;
    s.writer_nodes = s.nodes;
  } else {
    // Data-parallel rank 0 of every (TP, EP, PP) coordinate. Megatron orders ranks TP
    // innermost, so each TP group of writers is packed on ceil(tp / gpus_per_node) nodes
    // and different (EP, PP) coordinates lie on different nodes.
    const int64_t groups = int64_t{par.pipeline_parallel} * par.expert_parallel;
    s.writers = groups * par.tensor_parallel;
    s.writer_nodes =
        static_cast<int>(std::min<int64_t>(s.nodes, groups * ceil_div(par.tensor_parallel, gpus_per_node)));
  }
  return s;
}

}  // namespace ct::storage
