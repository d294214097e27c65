#include "models/workload/memory.h"

#include <algorithm>
#include <cmath>

#include "models/workload/layout.h"
#include "models/workload/parameters.h"

namespace ct::workload {
namespace {

double d(int64_t v) { return static_cast<double>(v); }
int64_t to_bytes(double v) { return static_cast<int64_t>(std::llround(v)); }

struct ActivationTerms {
  double replicated = 0.0;  // bytes per token, divided by t only with SP
  double split = 0.0;       // bytes per token, divided by t
  double gathered = 0.0;    // bytes per token, never divided by t
  double scores = 0.0;      // bytes per (token x key), divided by t
};

ActivationTerms activation_terms(const ModelSpec& m) {
  const double h = d(m.hidden);
  const double kv = d(kv_dim(m));
  const double mlp_per_width = is_swiglu(m) ? 6.0 : 4.0;
  ActivationTerms a;
  a.replicated = 8.0 * h + (has_dropout(m) ? 2.0 * h : 0.0);
  a.split = 2.0 * h + 4.0 * kv + 2.0 * h;
  if (!is_moe(m)) {
    a.split += mlp_per_width * d(ffn_hidden(m));
  } else {
    const double fe = d(expert_ffn_hidden(m));
    const double routed = m.moe.capacity_factor * d(m.moe.top_k);
    a.split += mlp_per_width * fe * (d(m.moe.shared_experts) + routed);
    a.gathered = 2.0 * h * routed;
  }
  a.scores = (has_dropout(m) ? 5.0 : 2.0) * d(m.heads);
  return a;
}

int64_t full_buckets(const JobSpec& job, const MemoryOptions& o) {
  const int64_t dpc = int64_t{job.parallelism.data_parallel} * job.parallelism.context_parallel;
  const int64_t params =
      o.bucket_params > 0 ? o.bucket_params : std::max<int64_t>(40'000'000, 1'000'000 * dpc);
  return 2 * params * o.grad_bytes_per_param;
}

}  // namespace

int64_t activation_bytes_per_layer(const JobSpec& job, Recompute recompute) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallelism;
  const double t = d(p.tensor_parallel);
  const double tokens = d(job.micro_batch_size) * d(m.seq_length) / d(p.context_parallel);
  const bool sp = p.sequence_parallel && p.tensor_parallel > 1;
  if (recompute == Recompute::full) {
    return to_bytes(2.0 * tokens * d(m.hidden) / (sp ? t : 1.0));
  }
  const ActivationTerms a = activation_terms(m);
  double bytes = tokens * (a.replicated / (sp ? t : 1.0) + a.split / t + a.gathered);
  if (recompute == Recompute::none) bytes += tokens * d(m.seq_length) * a.scores / t;
  return to_bytes(bytes);
}

double in_flight_microbatches(const JobSpec& job, int stage) {
  const int64_t p = job.parallelism.pipeline_parallel;
  const int64_t v = job.parallelism.virtual_pipeline;
  const int64_t m = microbatches(job);
  if (v <= 1) return d(std::min<int64_t>(p - stage, m));
  const int64_t chunks = std::min<int64_t>(2 * (p - stage - 1) + (v - 1) * p + 1, m * v);
  return d(chunks) / d(v);
}

StageParameters stage_parameters(const JobSpec& job, int stage) {
  const ModelSpec& m = job.model;
  const ParallelSpec& par = job.parallelism;
  const int64_t t = par.tensor_parallel;
  const ParameterCount c = count_parameters(m);
  const LayerParameters& L = c.layer;
  StageParameters s;
  const int64_t layers = layers_per_stage(job);
  s.dense = layers * ((L.attention + L.dense_mlp) / t + L.norms + L.router);
  s.expert = layers * (L.experts * L.expert) / (int64_t{par.expert_parallel} * t);
  const int64_t vocab_shard = (m.vocab + t - 1) / t * m.hidden;
  if (stage == 0) s.dense += vocab_shard + (learned_positions(m) ? m.seq_length * m.hidden : 0);
  if (stage == par.pipeline_parallel - 1) {
    s.dense += c.final_norm;
    const bool shares_embedding = m.tied_embeddings && par.pipeline_parallel == 1;
    if (!shares_embedding) s.dense += vocab_shard;
  }
  return s;
}

MemoryBreakdown memory_per_gpu(const JobSpec& job, int stage, const MemoryOptions& o) {
  const ModelSpec& m = job.model;
  const ParallelSpec& par = job.parallelism;
  const Recompute rc = parse_recompute(job.recompute_granularity);
  const int64_t t = par.tensor_parallel;
  const bool sp = par.sequence_parallel && t > 1;
  const double tokens = d(job.micro_batch_size) * d(m.seq_length) / d(par.context_parallel);

  MemoryBreakdown b;
  b.stage = stage;
  const StageParameters sp_params = stage_parameters(job, stage);
  b.parameters = sp_params.dense + sp_params.expert;

  const double shard_dense = d(par.data_parallel) * d(par.context_parallel);
  const double shard_expert = shard_dense / d(par.expert_parallel);
  auto state = [&](int64_t bytes_per_param, bool sharded) {
    const double dense = d(sp_params.dense) * d(bytes_per_param);
    const double expert = d(sp_params.expert) * d(bytes_per_param);
    return sharded ? to_bytes(dense / shard_dense + expert / shard_expert)
                   : to_bytes(dense + expert);
  };
  b.weights = state(o.weight_bytes_per_param, par.zero_stage >= 3);
  b.gradients = state(o.grad_bytes_per_param, par.zero_stage >= 2);
  b.optimizer = state(o.optimizer_bytes_per_param, par.zero_stage >= 1);

  b.in_flight_microbatches = in_flight_microbatches(job, stage);
  const double layer_microbatches = b.in_flight_microbatches * d(layers_per_stage(job));
  const int64_t per_layer = activation_bytes_per_layer(job, rc);
  const int64_t working =
      rc == Recompute::none ? 0 : activation_bytes_per_layer(job, Recompute::none) - per_layer;
  b.activations = to_bytes(layer_microbatches * d(per_layer)) + working;

  if (stage == 0) {
    const double micro_in_flight = std::ceil(b.in_flight_microbatches);
    const double mask = has_dropout(m) ? tokens * d(m.hidden) / (sp ? d(t) : 1.0) : 0.0;
    b.embedding_buffers = to_bytes(micro_in_flight * (8.0 * tokens + mask));
  }
  if (stage == par.pipeline_parallel - 1) {
    b.logits_buffers =
        to_bytes(4.0 * tokens * d(m.hidden) * (1.0 + d(m.vocab) / d(m.hidden)) / d(t));
  }

  b.temporary = full_buckets(job, o);
  if (t > 1) b.temporary += to_bytes(2.0 * 2.0 * tokens * d(m.hidden));
  if (par.zero_stage >= 3) {
    const LayerParameters L = layer_parameters(m);
    const int64_t layer_params = (L.attention + L.dense_mlp) / t + L.norms + L.router +
                                 L.experts * L.expert / (int64_t{par.expert_parallel} * t);
    b.temporary += 2 * o.weight_bytes_per_param * layer_params;
  }
  b.reserved = o.reserved_bytes;

  b.total = b.weights + b.gradients + b.optimizer + b.activations + b.embedding_buffers +
            b.logits_buffers + b.temporary + b.reserved;
  b.capacity = o.capacity_bytes;
  b.fits = b.total <= b.capacity;
  return b;
}

MemoryBreakdown peak_memory_per_gpu(const JobSpec& job, const MemoryOptions& options) {
  MemoryBreakdown best = memory_per_gpu(job, 0, options);
  for (int s = 1; s < job.parallelism.pipeline_parallel; ++s) {
    MemoryBreakdown b = memory_per_gpu(job, s, options);
    if (b.total > best.total) best = b;
  }
  return best;
}

}  // namespace ct::workload
