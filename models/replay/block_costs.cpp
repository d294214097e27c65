#include "models/replay/block_costs.h"

#include <algorithm>
#include <string_view>

#include "models/workload/layer_ops.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"

namespace ct::replay {
namespace {

using hardware::AttentionPass;
using hardware::MemoryOp;
using workload::Op;
using workload::OpKind;

MemoryOp memory_class(std::string_view name) {
  if (name.find("norm") != std::string_view::npos) return MemoryOp::normalization;
  if (name.find("softmax") != std::string_view::npos) return MemoryOp::softmax;
  return MemoryOp::streaming;
}

double op_time(const Op& op, const hardware::ComputeModel& compute) {
  switch (op.kind) {
    case OpKind::gemm:
      return compute.gemm_time(op.m, op.n, op.k, op.count, op.fp8).seconds();
    case OpKind::attention: {
      const double fwd = compute.attention_time(op.batch, op.heads, op.seq_q, op.head_dim, op.causal,
                                                AttentionPass::forward, op.seq_kv).seconds();
      if (!op.backward) return fwd;
      const double both = compute.attention_time(op.batch, op.heads, op.seq_q, op.head_dim, op.causal,
                                                 AttentionPass::forward_backward, op.seq_kv).seconds();
      return std::max(0.0, both - fwd);
    }
    case OpKind::elementwise:
      return compute.elementwise_time(sim::Bytes{op.bytes}, memory_class(op.name)).seconds();
  }
  return 0.0;
}

struct PassTimes {
  double total = 0.0;
  double gemm = 0.0;
};

PassTimes pass_time(const std::vector<Op>& ops, const hardware::ComputeModel& compute) {
  PassTimes t;
  for (const Op& op : ops) {
    const double s = op_time(op, compute);
    t.total += s;
    if (op.kind == OpKind::gemm) t.gemm += s;
  }
  return t;
}

// Ring collective over n members: steps x alpha + factor x (n-1)/n x bytes / bandwidth.
double ring_time(int n, double bytes, double factor, double bytes_per_s, double alpha) {
  if (n <= 1 || bytes <= 0) return 0.0;
  const double nn = n;
  return factor * (nn - 1) * alpha + factor * (nn - 1) / nn * bytes / bytes_per_s;
}

}  // namespace

std::vector<StageCosts> block_costs(const workload::JobSpec& job, const hardware::ComputeModel& compute,
                                    const hardware::NodeSpec& node, const CostParams& params) {
  const auto& par = job.parallelism;
  const int p = par.pipeline_parallel, v = par.virtual_pipeline, t = par.tensor_parallel;
  const workload::Recompute recompute = workload::parse_recompute(job.recompute_granularity);

  const workload::LayerOps layer = workload::transformer_layer_ops(job);
  const PassTimes fwd = pass_time(layer.forward, compute);
  const PassTimes bwd = pass_time(layer.backward, compute);
  const PassTimes rec = pass_time(layer.recompute, compute);

  // Tensor-parallel collectives per layer and pass, on NVLink.
  const double nvlink = node.nvlink_rate.bytes_per_second() * params.protocol_efficiency;
  const double alpha_nvl = params.step_latency_s + node.nvlink_latency.seconds();
  const double activation = static_cast<double>(job.micro_batch_size) * static_cast<double>(job.model.seq_length) /
                            par.context_parallel * static_cast<double>(job.model.hidden) * 2.0;
  double tp_pass = 0.0;
  if (t > 1) {
    tp_pass = par.sequence_parallel ? 4 * ring_time(t, activation, 1.0, nvlink, alpha_nvl)
                                    : 2 * ring_time(t, activation, 2.0, nvlink, alpha_nvl);
  }
  // Expert-parallel dispatch + combine, context-parallel K/V ring, per layer and pass.
  auto group_rate = [&](int n) {
    return n <= node.gpus_per_node / std::max(1, t) ? nvlink : params.nic_bytes_per_s * params.protocol_efficiency;
  };
  double ep_pass = 0.0;
  if (job.model.moe.experts > 0 && par.expert_parallel > 1) {
    const int e = par.expert_parallel;
    const double routed = activation / t * job.model.moe.top_k * job.model.moe.capacity_factor;
    ep_pass = 2 * ring_time(e, routed, 1.0, group_rate(e), params.step_latency_s);
  }
  double cp_pass = 0.0;
  if (par.context_parallel > 1) {
    const int c = par.context_parallel;
    const double kv = 2.0 * activation / t * static_cast<double>(workload::kv_heads(job.model)) / job.model.heads;
    cp_pass = ring_time(c, kv * c, 1.0, group_rate(c), params.step_latency_s);
  }
  auto comm_exposed = [&](double comm, double gemm) {
    return params.tp_comm_overlap ? std::max(0.0, comm - gemm) : comm;
  };

  const double fwd_comm = tp_pass + ep_pass + cp_pass;
  const double bwd_comm = fwd_comm * (recompute == workload::Recompute::full ? 2.0 : 1.0);

  const workload::LayerOps embed = workload::embedding_ops(job);
  const workload::LayerOps output = workload::output_layer_ops(job);
  const PassTimes embed_f = pass_time(embed.forward, compute), embed_b = pass_time(embed.backward, compute);
  const PassTimes out_f = pass_time(output.forward, compute), out_b = pass_time(output.backward, compute);

  std::vector<StageCosts> stages(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s) {
    StageCosts& sc = stages[static_cast<size_t>(s)];
    sc.forward.resize(static_cast<size_t>(v));
    sc.backward.resize(static_cast<size_t>(v));
    const workload::StageParameters params_here = workload::stage_parameters(job, s);
    const double stage_params = static_cast<double>(params_here.dense + params_here.expert);
    sc.params_per_chunk = stage_params / v;
    for (int c = 0; c < v; ++c) {
      const int virtual_stage = c * p + s;
      BlockCost f, b;
      const auto n = static_cast<double>(workload::layers_in_chunk(job, s, c));
      f.compute_s = n * fwd.total;
      f.tp_comm_s = n * comm_exposed(fwd_comm, fwd.gemm);
      // Full recompute of only the chunk's first recompute_layers layers (block method).
      const double n_rec = recompute == workload::Recompute::full
                               ? static_cast<double>(workload::recomputed_layers_in_chunk(job, s, c))
                               : n;
      b.compute_s = n * bwd.total + n_rec * rec.total;
      b.tp_comm_s = recompute == workload::Recompute::full
                        ? n_rec * comm_exposed(bwd_comm, bwd.gemm + rec.gemm) +
                              (n - n_rec) * comm_exposed(fwd_comm, bwd.gemm)
                        : n * comm_exposed(bwd_comm, bwd.gemm + rec.gemm);
      if (virtual_stage == 0) {
        f.compute_s += embed_f.total;
        b.compute_s += embed_b.total;
      }
      if (virtual_stage == p * v - 1) {
        f.compute_s += out_f.total;
        b.compute_s += out_b.total;
      }
      sc.forward[static_cast<size_t>(c)] = f;
      sc.backward[static_cast<size_t>(c)] = b;
    }
    const int shard = par.zero_stage >= 1 ? par.data_parallel * par.context_parallel : 1;
    const double optimizer_bytes = stage_params / shard * 32.0;
    sc.optimizer_s = compute.elementwise_time(sim::Bytes{static_cast<int64_t>(optimizer_bytes)}).seconds();
  }
  return stages;
}

}  // namespace ct::replay
