#include "models/replay/block_costs.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "models/collective/nccl_tuning.h"
#include "models/workload/layer_ops.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"

namespace ct::replay {
namespace {

using hardware::AttentionPass;
using hardware::MemoryOp;
using workload::Op;
using workload::OpKind;

// The unfused attention's softmax is Megatron's fused scale-mask-softmax
// (megatron/fused_kernels/scaled_upper_triang_masked_softmax.h, --masked-softmax-fusion, on by
// default): one warp per row of at most 2,048-16,384 scores holds the row in registers, so it
// reads and writes each score once, as a streaming kernel does; the calibrated softmax class is
// PyTorch's torch.softmax, another kernel. Checked on Korthikanti et al. 2022 Table 4 (GPT-22B
// layer times on A100, `korthikanti` in ./clustertwin accuracy).
MemoryOp memory_class(std::string_view name) {
  if (name.find("norm") != std::string_view::npos) return MemoryOp::normalization;
  if (name.starts_with("attn_core.softmax")) return MemoryOp::streaming;
  if (name.find("softmax") != std::string_view::npos) return MemoryOp::softmax;
  return MemoryOp::streaming;
}

double op_time(const Op& op, const hardware::ComputeModel& compute,
               const workload::AttentionKernelSpeed& kernel = {}) {
  switch (op.kind) {
    case OpKind::gemm:
      return compute.gemm_time(op.m, op.n, op.k, op.count, op.fp8, op.mx, op.fp4).seconds();
    case OpKind::attention: {
      const double fwd = compute
                             .attention_time(op.batch, op.heads, op.seq_q, op.head_dim, op.causal,
                                             AttentionPass::forward, op.seq_kv, op.window)
                             .seconds();
      if (!op.backward) return fwd / kernel.forward_at(op.head_dim);
      const double both = compute
                              .attention_time(op.batch, op.heads, op.seq_q, op.head_dim, op.causal,
                                              AttentionPass::forward_backward, op.seq_kv, op.window)
                              .seconds();
      return std::max(0.0, both - fwd) / kernel.backward_at(op.head_dim);
    }
    case OpKind::elementwise:
      return compute.elementwise_time(sim::Bytes{op.bytes}, memory_class(op.name)).seconds();
  }
  return 0.0;
}

struct PassTimes {
  double total = 0.0;
  double gemm = 0.0;
  double attention = 0.0;
};

PassTimes pass_time(const std::vector<Op>& ops, const hardware::ComputeModel& compute,
                    const workload::AttentionKernelSpeed& kernel = {}) {
  PassTimes t;
  for (const Op& op : ops) {
    const double s = op_time(op, compute, kernel);
    t.total += s;
    if (op.kind == OpKind::gemm) t.gemm += s;
    if (op.kind == OpKind::attention) t.attention += s;
  }
  return t;
}

// Ring collective over n members: steps x alpha + factor x (n-1)/n x bytes / bandwidth.
double ring_time(int n, double bytes, double factor, double bytes_per_s, double alpha) {
  if (n <= 1 || bytes <= 0) return 0.0;
  const double nn = n;
  return factor * (nn - 1) * alpha + factor * (nn - 1) / nn * bytes / bytes_per_s;
}

// A collective running beside a compute kernel: exposed what outlasts the compute, and the
// compute loses `share` of its speed (the SMs the collective's CTAs hold) while both run.
double beside(double comm, double compute, double share) {
  return std::max(0.0, comm - compute) + std::min(comm, compute) * share;
}

// Of a GPU's SMs, the share NCCL's ring channels take (their CTAs, nccl_tuning.h ring_intra_ctas).
double nccl_sm_share(const hardware::NodeSpec& node) {
  return collective::ring_intra_ctas(collective::nccl_nvlink_total(node.nvlink_rate.bytes_per_second()),
                                     node.gpu.sm_arch) /
         static_cast<double>(node.gpu.sm_count);
}

// One sequence-parallel TP collective of each kind, per layer (seconds): the all-gather of a
// linear layer's input (forward, and its backward re-gather or recompute), the all-gather of
// a row-parallel layer's output gradient (backward), and a reduce-scatter. Under FP8 the
// all-gathers move what the stack casts before gathering (StackMemory::fp8_grad_gathers).
struct TpCollectives {
  double input_gather = 0.0, grad_gather = 0.0, reduce_scatter = 0.0;
};

// Bytes per bf16 byte of an all-gathered activation: 1/2 in FP8, MXFP8 adding one scale byte
// per 32 elements, NVFP4 (0.5 + 1/16) / 2 (TE distributed.py _all_gather_nvfp4 gathers the
// quantized data and its scales).
double fp8_gather_ratio(const workload::JobSpec& job) {
  if (!workload::is_fp8(job)) return 1.0;
  if (job.precision == "nvfp4") return workload::quantized_bytes(job) / 2.0;
  return job.precision == "mxfp8" ? (1.0 + 1.0 / 32.0) / 2.0 : 0.5;
}

// PyTorch's tensor parallelism (DTensor; stacks torchtitan and pytorch) shards the sequence
// dimension of [batch, sequence, hidden] activations (SequenceParallel, Shard(1)). NCCL gathers
// and scatters along the first dimension, so each functional all-gather along dimension 1 ends
// with torch.cat(torch.chunk(out, group_size, dim=0), dim=1), a copy of the gathered tensor, and
// each reduce-scatter along dimension 1 starts with the same copy of its input
// (torch/distributed/_functional_collectives.py all_gather_tensor / reduce_scatter_tensor,
// torch 2.4-2.7). Each copy reads and writes the collective's full tensor on the compute stream
// before (reduce-scatter) or after (all-gather) it: an eager copy (StageCosts::copy_s). Newer
// torch returns a view instead when the dimensions before the sequence are 1 (micro-batch 1);
// the twin keeps the copy there too (the versions of the published runs). Only the plain
// collectives copy: tp_collectives adds them when given the copy costs (tp_pass_times), not
// for tp_comm_overlap, whose overlapped GEMMs consume the shards where they land.
bool dtensor_sequence_copies(const workload::JobSpec& job) {
  const workload::Stack stack = workload::parse_stack(job.stack);
  return job.parallelism.sequence_parallel &&
         (stack == workload::Stack::torchtitan || stack == workload::Stack::pytorch);
}

// The calibrated eager copy that StageCosts::copy_s charges: the streaming kernels' launch
// floor and rate.
StageCosts eager_copy_costs(const hardware::ComputeModel& compute) {
  StageCosts c;
  c.copy_floor_s = compute.calibration().elementwise.streaming.launch_s;
  c.copy_bytes_per_s = compute.gpu().hbm_bytes_per_s * compute.calibration().elementwise.streaming.eff;
  return c;
}

TpCollectives tp_collectives(const workload::JobSpec& job, int t, double activation, double rate,
                             double alpha, const StageCosts* copies = nullptr) {
  const double fp8 = fp8_gather_ratio(job);
  const double grad = workload::stack_memory(job).fp8_grad_gathers ? fp8 : 1.0;
  TpCollectives c{ring_time(t, activation * fp8, 1.0, rate, alpha),
                  ring_time(t, activation * grad, 1.0, rate, alpha),
                  ring_time(t, activation, 1.0, rate, alpha)};
  if (copies != nullptr && dtensor_sequence_copies(job)) {  // each copy reads and writes its bytes
    c.input_gather += copies->copy_s(2.0 * activation * fp8);
    c.grad_gather += copies->copy_s(2.0 * activation * grad);
    c.reduce_scatter += copies->copy_s(2.0 * activation);
  }
  return c;
}

// Seconds of the GEMMs named `name` among `ops` on the compute model.
double gemm_seconds_named(const std::vector<workload::Op>& ops, std::string_view name,
                          const hardware::ComputeModel& compute) {
  double s = 0.0;
  for (const workload::Op& op : ops) {
    if (op.kind == workload::OpKind::gemm && op.name == name) s += op_time(op, compute);
  }
  return s;
}

// tp_comm_overlap with sequence parallelism (Transformer Engine userbuffers, as NeMo's
// H100 configs set them: nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py,
// userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192). Each TP collective u of a layer is
// overlapped with the GEMM that consumes or produces it, never for free:
//   all-gathers before QKV / MLP-in (forward) and before the projection / MLP-out dgrad
//   (backward): ring exchange, t chunks, the transfer of chunk i+1 under the GEMM of chunk i:
//   exposed max(0, u - g (t - 1) / t), no SMs taken;
//   reduce-scatters after the projection / MLP-out (forward): pipelined in 4 splits on 24 / 16
//   SMs kept from the GEMM (set_sm_margin): the last split exposed, u / 4 + max(0, 3/4 (u - g'))
//   with g' the GEMM on the remaining SMs, whose slowdown g (SMs / (SMs - k) - 1) is paid too;
//   backward QKV / MLP-in: the dgrad reduce-scatter and the wgrad input all-gather in bulk
//   beside the other GEMM (4 + 24 and 2 + 4 SMs, no margin): exposed max(0, u - g), and the
//   concurrent GEMM loses k / SMs of its speed while they overlap.
// EP and CP exchanges keep the plain max(0, comm - gemm) rule.
// Returns the exposed time per layer of the TP collectives (u: their times, by kind) in forward
// and backward.
std::pair<double, double> userbuffer_exposed(const workload::LayerOps& layer,
                                             const hardware::ComputeModel& compute, const TpCollectives& u,
                                             int t, double sms) {
  auto gemm_of = [&](const std::vector<workload::Op>& ops, std::string_view name) {
    return gemm_seconds_named(ops, name, compute);
  };
  auto ring_exchange = [&](double c, double g) { return std::max(0.0, c - g * (t - 1) / t); };
  auto pipelined_rs = [&](double g, double k) {
    const double c = u.reduce_scatter, slowed = g * sms / (sms - k);
    return c / 4.0 + std::max(0.0, 0.75 * (c - slowed)) + (slowed - g);
  };
  auto bulk = [&](double c, double g, double k) { return beside(c, g, k / sms); };
  const auto& F = layer.forward;
  const auto& B = layer.backward;
  const double fwd = ring_exchange(u.input_gather, gemm_of(F, "qkv")) + pipelined_rs(gemm_of(F, "proj"), 24) +
                     ring_exchange(u.input_gather, gemm_of(F, "fc1") + gemm_of(F, "shared_fc1")) +
                     pipelined_rs(gemm_of(F, "fc2") + gemm_of(F, "shared_fc2"), 16);
  // Backward: the output-gradient all-gathers before the row-parallel dgrads; beside QKV / MLP-in
  // the dgrad reduce-scatter (under the wgrad GEMM) and the input re-gather (under the dgrad).
  const double bwd =
      ring_exchange(u.grad_gather, gemm_of(B, "proj.dgrad")) +
      ring_exchange(u.grad_gather, gemm_of(B, "fc2.dgrad")) +
      bulk(u.reduce_scatter, gemm_of(B, "qkv.wgrad"), 4) + bulk(u.input_gather, gemm_of(B, "qkv.dgrad"), 24) +
      bulk(u.reduce_scatter, gemm_of(B, "fc1.wgrad"), 2) + bulk(u.input_gather, gemm_of(B, "fc1.dgrad"), 4);
  return {fwd, bwd};
}

// tp_comm_overlap on the PyTorch stacks (torchtitan, pytorch) is PyTorch's asynchronous TP:
// torch.compile's micro-pipeline pass (torch/_inductor/fx_passes/micro_pipeline_tp.py; torchtitan's
// parallelism.enable_async_tensor_parallel) fuses the forward's all-gathers with the matmuls that
// consume them and its matmuls with the reduce-scatters of their output into the symmetric-memory
// ops of torch/distributed/_symmetric_memory (read at pytorch 006b161):
//   all-gather + matmul (_pipelined_multi_all_gather_and_consume): the rank copies its shard into
//   its symmetric buffer and meets the others at a barrier (not overlapped: the source gives up
//   that overlap on purpose), multiplies its own shard, then pulls each of the t - 1 remote shards
//   (a peer copy, no SMs) and multiplies it, on two alternating streams, so a shard's copy runs
//   beside the previous shard's matmul: exposed the shard copy (one eager copy of 1/t of the
//   gathered bytes) plus max(0, u - g (t - 1) / t), u the gather's time, g the matmul's;
//   matmul + reduce-scatter (_pipelined_produce_and_all2all, then a reduction of the t partial
//   shards): each remote rank's chunk is produced and copied to it while the next is produced,
//   the own chunk last: exposed the last chunk's copy or what the copies outlast the matmuls,
//   max(u / (t - 1), u - g (t - 1) / t), and the reduction, one eager kernel reading the t
//   partials (the whole activation) and writing a shard.
// The backward's collectives stay plain DTensor ones, copies included: the column-parallel
// linears' input gradients are sums of separate matmuls (wq, wk, wv; w1, w3 in torchtitan's
// attention and SwiGLU MLP) before their reduce-scatter, which the pass does not match (it fuses
// a matmul feeding the reduce-scatter directly), and the output-gradient all-gathers also feed a
// transposed weight-gradient matmul. PyTorch's announcement measured the forward only gaining:
// up to 29% / 20% forward, about 8% end to end on Llama 3 8B / 70B (Aug 2024). A full recompute
// replays the forward's fused ops (add_layers).
// The fused ops take the shards where they land, so there is no DTensor rearranging copy
// (dtensor_sequence_copies). The copies move at the TP ring's rate (peer copies through NVSwitch,
// not measured apart); each fused matmul runs as t matmuls of 1/t of its rows, and what that
// costs over the whole one on the compute model is exposed too. Returns the forward's exposed
// time per layer; the backward's is the plain collectives' (tp_pass_times).
double symmetric_memory_exposed(const workload::JobSpec& job, const workload::LayerOps& layer,
                                const hardware::ComputeModel& compute, const TpCollectives& u, int t,
                                double activation, const StageCosts& copies) {
  auto gemm_of = [&](const std::vector<workload::Op>& ops, std::string_view name) {
    return gemm_seconds_named(ops, name, compute);
  };
  // What the matmuls lose run as t shards of the rows (tokens) each.
  auto split_of = [&](const std::vector<workload::Op>& ops, std::string_view name) {
    double s = 0.0;
    for (const workload::Op& op : ops) {
      if (op.kind != workload::OpKind::gemm || op.name != name) continue;
      const double whole = op_time(op, compute);
      const double shards =
          compute.gemm_time(std::max<int64_t>(1, op.m / t), op.n, op.k, op.count * t, op.fp8, op.mx, op.fp4)
              .seconds();
      s += std::max(0.0, shards - whole);
    }
    return s;
  };
  const double fp8 = fp8_gather_ratio(job);
  auto gather = [&](const std::vector<workload::Op>& ops, std::string_view a, std::string_view b, double c,
                    double bytes) {
    const double g = gemm_of(ops, a) + gemm_of(ops, b);
    return copies.copy_s(2.0 * bytes / t) + std::max(0.0, c - g * (t - 1) / t) + split_of(ops, a) +
           split_of(ops, b);
  };
  auto scatter = [&](const std::vector<workload::Op>& ops, std::string_view a, std::string_view b) {
    const double c = u.reduce_scatter, g = gemm_of(ops, a) + gemm_of(ops, b);
    return std::max(c / (t - 1), c - g * (t - 1) / t) + copies.copy_s(activation * (1.0 + 1.0 / t)) +
           split_of(ops, a) + split_of(ops, b);
  };
  const auto& F = layer.forward;
  return gather(F, "qkv", "", u.input_gather, activation * fp8) + scatter(F, "proj", "") +
         gather(F, "fc1", "shared_fc1", u.input_gather, activation * fp8) + scatter(F, "fc2", "shared_fc2");
}

// The TP ring's rate: NVLink inside the NVLink domain; a larger group rings through the NICs.
double tp_rate(const hardware::NodeSpec& node, const CostParams& params, double nvlink, int t) {
  return t <= node.nvlink_domain_gpus() ? nvlink : params.nic_bytes_per_s * params.protocol_efficiency;
}

// The TP collectives of one layer without overlap, per pass: the forward's (2 input all-gathers
// + 2 reduce-scatters with sequence parallelism, else 2 all-reduces), the backward's own (2
// reduce-scatters + 2 output-gradient all-gathers, or 2 all-reduces), and what a recompute
// replays of them under torchtitan's op-level policy: whatever it does not save, i.e. the
// all-gathers (its _save_list keeps reduce_scatter_tensor, not all_gather_into_tensor:
// parallelize_llama.py at 9dec370 and 820504e) or the all-reduces. Full recompute replays the
// whole forward's.
struct TpPass {
  double forward = 0.0, backward = 0.0, replayed = 0.0;
};

TpPass tp_pass_times(const workload::JobSpec& job, const hardware::NodeSpec& node, const CostParams& params,
                     double nvlink, double activation, double alpha, const StageCosts& copies) {
  const int t = job.parallelism.tensor_parallel;
  if (t <= 1) return {};
  const double rate = tp_rate(node, params, nvlink, t);
  if (!job.parallelism.sequence_parallel) {
    const double all_reduces = 2 * ring_time(t, activation, 2.0, rate, alpha);
    return {all_reduces, all_reduces, all_reduces};
  }
  const TpCollectives c = tp_collectives(job, t, activation, rate, alpha, &copies);
  return {2 * (c.input_gather + c.reduce_scatter), 2 * (c.grad_gather + c.reduce_scatter),
          2 * c.input_gather};
}

// Megatron's asynchronous TP collectives in backward (tp_async_backward, without userbuffers;
// megatron/mpu/layers.py LinearWithGradAccumulationAndAsyncCommunication.backward since
// Megatron-LM 3f65246, Sep 2021, now core/tensor_parallel/layers.py): a column-parallel linear
// (QKV, MLP in) launches its collective on NCCL's stream first, then the GEMM beside it:
//   without sequence parallelism: the all-reduce of the input gradient (a) under the
//     weight-gradient GEMM;
//   with it: the all-gather of the saved (sequence-sharded) input (u) under the input-gradient
//     GEMM, then the reduce-scatter of the input gradient (u) under the weight-gradient GEMM;
//     the row-parallel linears' all-gathers of their output gradient (u each) stay exposed.
// Each overlap exposes max(0, comm - gemm), and the GEMM loses the CTAs NCCL's ring runs on
// (k SMs, nccl_tuning.h ring_intra_ctas) while both run: + min(comm, gemm) k / SMs. Returns the
// backward's exposed TP time per layer; none where the job does not run them (userbuffers, TP 1,
// other stacks).
std::optional<double> async_tp_backward(const workload::JobSpec& job, const workload::LayerOps& layer,
                                        const hardware::ComputeModel& compute, const hardware::NodeSpec& node,
                                        const CostParams& params, double nvlink, double alpha,
                                        double activation) {
  const int t = job.parallelism.tensor_parallel;
  if (params.tp_comm_overlap || t <= 1 || !job.tp_async_backward) return std::nullopt;
  const double rate = tp_rate(node, params, nvlink, t);
  const TpCollectives u = tp_collectives(job, t, activation, rate, alpha);
  const double a = ring_time(t, activation, 2.0, rate, alpha);
  const double share = nccl_sm_share(node);
  auto gemm_of = [&](std::string_view name, std::string_view shared) {
    double s = 0.0;
    for (const workload::Op& op : layer.backward) {
      if (op.kind == workload::OpKind::gemm && (op.name == name || op.name == shared))
        s += op_time(op, compute);
    }
    return s;
  };
  if (!job.parallelism.sequence_parallel) {
    return beside(a, gemm_of("qkv.wgrad", ""), share) +
           beside(a, gemm_of("fc1.wgrad", "shared_fc1.wgrad"), share);
  }
  return 2.0 * u.grad_gather + beside(u.input_gather, gemm_of("qkv.dgrad", ""), share) +
         beside(u.reduce_scatter, gemm_of("qkv.wgrad", ""), share) +
         beside(u.input_gather, gemm_of("fc1.dgrad", "shared_fc1.dgrad"), share) +
         beside(u.reduce_scatter, gemm_of("fc1.wgrad", "shared_fc1.wgrad"), share);
}

// An expert exchange among e ranks that moves `inside` bytes a rank over NVLink and `outside`
// out of its NIC, both at once; latency one step per peer, as a ring's.
double exchange_s(int e, double inside, double outside, double nvlink, double nic, double alpha) {
  return (e - 1.0) * alpha + std::max(inside / nvlink, outside > 0 ? outside / nic : 0.0);
}

// Expert-parallel all-to-all, dispatch or combine, one layer and pass. Megatron-core orders
// ranks tp-cp-ep-dp-pp (parallel_state.initialize_model_parallel's default order), so the e
// members of an expert group sit t x c GPUs apart and `local` of them share an NVLink domain.
// Each rank sends `routed` bytes (its tokens x top_k x capacity); a copy goes to each member
// with equal probability (balanced routing): (local - 1)/e of it over NVLink, (e - local)/e out
// of the GPU's NIC, both at once. Latency: one step per peer, as a ring's.
double ep_all_to_all(int e, int local, double routed, double nvlink, double nic, double alpha) {
  if (e <= 1 || routed <= 0) return 0.0;
  const double inside = routed * (local - 1.0) / e, outside = routed * (e - local) / static_cast<double>(e);
  return exchange_s(e, inside, outside, nvlink, nic, alpha);
}

// The probability that a token's top_k experts, drawn without replacement from `experts` equally
// likely ones (balanced routing), include one of a given `group` of them: 1 - C(E - g, k) / C(E, k).
double expert_group_hit(int experts, int group, int k) {
  double miss = 1.0;
  for (int i = 0; i < k; ++i) {
    const double left = static_cast<double>(experts - group - i);
    if (left <= 0.0) return 1.0;
    miss *= left / static_cast<double>(experts - i);
  }
  return 1.0 - miss;
}

// Of a GPU's SMs, the share the expert exchange's kernels hold while they run beside compute
// (Megatron's combined 1F1B schedule): NCCL's ring CTAs for alltoall; DeepEP's 20 (Megatron's
// default moe_deepep_num_sms, megatron/core/transformer/transformer_config.py at d98e8a6; the
// Megatron-Core MoE report, Sec. 4.2.3: "20 SMs per GPU ... roughly 20% GEMM-efficiency
// overhead"); HybridEP's 32 (HybridEpBuffer's num_sms_dispatch_api / num_sms_combine_api
// defaults, deepseek-ai/DeepEP hybrid-ep; Megatron-Bridge's H100 Qwen3-30B-A3B recipe sets 32).
double dispatcher_sm_share(const workload::JobSpec& job, const hardware::NodeSpec& node) {
  using D = workload::JobSpec::MoeDispatcher;
  if (job.moe_dispatcher == D::alltoall) return nccl_sm_share(node);
  const double sms = job.moe_dispatcher == D::deepep ? 20.0 : 32.0;
  return std::min(1.0, sms / static_cast<double>(node.gpu.sm_count));
}

// Expert-parallel dispatch + combine and the context-parallel K/V ring, per layer and pass:
// inside the NVLink domain at `nvlink`, else over the NICs.
// The context-parallel exchange of one layer and pass: `pass` the forward's K/V movement (a ring
// of c - 1 steps or PyTorch's all-gather, the same bytes), `dkv_step` one step of PyTorch's
// fp32 dK/dV ring (0 on other stacks, whose backward moves twice the forward's bytes).
struct CpPass {
  double pass = 0.0, dkv_step = 0.0;
  bool pytorch_ring = false;
};

// torchtitan's context parallelism is PyTorch's ring attention
// (torch/distributed/tensor/experimental/_attention.py, _ContextParallelOptions at torch of Dec
// 2024 to 2026: rotate_method ALL_GATHER, convert_to_f32 True): it shards SDPA's inputs, i.e. K
// and V after torchtitan's repeat_kv (every query head's copy, heads / kv_heads times the
// bytes); the forward all-gathers them once, issued before the first block and waited for
// before the second; the backward gathers them again and sends the accumulating dK/dV (fp32,
// twice K/V's bytes) to the next rank after each of its c blocks, waited for after the next.
bool pytorch_ring_attention(const workload::JobSpec& job) {
  return workload::parse_stack(job.stack) == workload::Stack::torchtitan;
}

CpPass cp_pass_of(const workload::JobSpec& job, double kv, double rate, double alpha) {
  const int c = job.parallelism.context_parallel;
  CpPass p;
  if (c <= 1) return p;
  if (!pytorch_ring_attention(job)) {
    p.pass = ring_time(c, kv * c, 1.0, rate, alpha);
    return p;
  }
  const double expanded = kv * workload::attention_kv_copies(job);
  p.pytorch_ring = true;
  p.pass = ring_time(c, expanded * c, 1.0, rate, alpha);
  p.dkv_step = alpha + 2.0 * expanded / rate;
  return p;
}

std::pair<double, CpPass> ep_cp_pass(const workload::JobSpec& job, const hardware::NodeSpec& node,
                                     const CostParams& params, double nvlink, double activation) {
  const auto& par = job.parallelism;
  const int t = par.tensor_parallel;
  auto group_rate = [&](int n) {
    return n <= node.nvlink_domain_gpus() / std::max(1, t)
               ? nvlink
               : params.nic_bytes_per_s * params.protocol_efficiency;
  };
  double ep_pass = 0.0;
  if (job.model.moe.experts > 0 && par.expert_parallel > 1) {
    const int e = par.expert_parallel;
    const double routed = activation / t * job.model.moe.top_k * job.model.moe.capacity_factor;
    // Folded (expert_tensor_parallel et < t): the expert groups stride et GPUs, not t x c.
    const int et = workload::expert_tp(par);
    const int stride = et < t ? et : t * par.context_parallel;
    const int local = std::clamp(node.nvlink_domain_gpus() / std::max(1, stride), 1, e);
    const double nic = params.nic_bytes_per_s * params.protocol_efficiency;
    ep_pass =
        job.moe_dispatcher != workload::JobSpec::MoeDispatcher::alltoall
            ? 2 * token_dispatch(e, local, job.model.moe, activation / t, nvlink, nic, params.step_latency_s)
            : 2 * ep_all_to_all(e, local, routed, nvlink, nic, params.step_latency_s);
  }
  CpPass cp;
  if (par.context_parallel > 1) {
    const int c = par.context_parallel;
    const double kv = activation / t * static_cast<double>(workload::kv_elements(job.model)) /
                      static_cast<double>(job.model.hidden);
    cp = cp_pass_of(job, kv, group_rate(c), params.step_latency_s);
  }
  return {ep_pass, cp};
}

// The context-parallel K/V ring runs inside the attention op (Transformer Engine's
// AttnFuncWithCP, v1.4 onwards): the exchange for step i+1 is in flight while step i's attention
// block computes, c steps of 1/c of the attention each, so c - 1 transfers hide behind c - 1
// blocks; whatever a transfer outlasts its block is exposed. Backward sends K/V and the
// accumulating dK/dV together (two buffers a step): twice the forward's bytes. A recompute that
// includes the attention runs the forward ring again.
struct CpExposed {
  double forward = 0.0, backward = 0.0, recompute = 0.0;
};
CpExposed cp_ring_exposed(int c, const CpPass& cp, const PassTimes& fwd, const PassTimes& bwd,
                          const PassTimes& rec) {
  if (c <= 1) return {};
  if (cp.pytorch_ring) {
    // PyTorch's ring attention (cp_pass_of): each gather hides behind the first block only,
    // each dK/dV step behind one block.
    auto gathered = [&](double attention) { return std::max(0.0, cp.pass - attention / c); };
    const double dkv = c * std::max(0.0, cp.dkv_step - bwd.attention / c);
    return {gathered(fwd.attention), gathered(bwd.attention) + dkv,
            rec.attention > 0 ? gathered(rec.attention) : 0.0};
  }
  const double blocks = (c - 1.0) / c;
  auto exposed = [&](double comm, double attention) { return std::max(0.0, comm - attention * blocks); };
  return {exposed(cp.pass, fwd.attention), exposed(2.0 * cp.pass, bwd.attention),
          rec.attention > 0 ? exposed(cp.pass, rec.attention) : 0.0};
}

// A stage's chunk vectors and parameter shares; returns the stage's parameter count.
double init_stage(const workload::JobSpec& job, int s, StageCosts& sc) {
  const auto v = static_cast<size_t>(job.parallelism.virtual_pipeline);
  sc.forward.resize(v);
  sc.backward.resize(v);
  const workload::StageParameters params_here = workload::stage_parameters(job, s);
  const double stage_params = static_cast<double>(params_here.dense + params_here.expert);
  sc.params_per_chunk = stage_params / static_cast<double>(v);
  sc.expert_params_per_chunk = static_cast<double>(params_here.expert) / static_cast<double>(v);
  if (job.fp8_params && stage_params > 0) {  // linear weights gathered in FP8 (NVFP4: 0.5625 bytes)
    const double fp8 = std::min(stage_params, workload::matmul_parameters_in_stage(job, s));
    sc.gather_bytes_per_param =
        (2.0 * stage_params - (2.0 - workload::quantized_bytes(job)) * fp8) / stage_params;
  }
  return stage_params;
}

// Adam over the shard, 32 bytes per parameter moved. With 16-bit master remainders the master
// is read as bf16 weight + remainder (4 bytes, as the fp32 master) and written as both (4 bytes),
// where the fp32 master was written and the bf16 weight written again (6): 2 bytes fewer
// (JobSpec::master_remainders).
double optimizer_bytes_per_parameter(const workload::JobSpec& job) {
  return job.master_remainders ? 30.0 : 32.0;
}

// One layer's saved activations over the GPU-host link (activation offloading).
double offload_copy_s(const workload::JobSpec& job, const hardware::NodeSpec& node) {
  const double host =
      node.gpu.host_link_bytes_per_s > 0 ? node.gpu.host_link_bytes_per_s : node.pcie_rate.bytes_per_second();
  return static_cast<double>(workload::activation_bytes_per_layer(job, workload::Recompute::none)) / host;
}

}  // namespace

// The flex dispatcher's token-based kernels (DeepEP, HybridEP; --moe-token-dispatcher-type flex):
// a token goes once to each GPU that holds one of its experts (DeepEP's dispatch puts a token
// into a rank's buffer once, with its top-k indices; deepseek-ai/DeepEP issues #48, #58), and to
// another NVLink domain once, to the GPU of the same local index, which forwards it over NVLink
// to the GPUs of its domain that need it (HybridEP: NVIDIA, "Scalable Training of MoE Models with
// Megatron Core", arXiv 2603.07685, Sec. 4.2.2; DeepEP's NVLink/RDMA forwarding). Per token, with
// e ranks in n = e / local domains of `local`, E / e experts each, p_g the chance a given rank
// is hit and p_d a given domain: (n - 1) p_d copies leave through the NIC, and (local - 1) p_g n
// go over NVLink (the rank's own share of its domain plus what it forwards for the n - 1 others).
// The same bytes come back in the combine. Against the top_k copies of alltoall: EP 16 over two
// H100 nodes at DeepSeek-V3's shape (256 experts, top 8) sends a quarter of alltoall's bytes
// across nodes (1 copy against 8 x 8 / 16), where the paper's Table 7 measured HybridEP's
// dispatch at 1485 us against NCCL all-to-all's 5774 (0.26).
double token_dispatch(int e, int local, const workload::MoeSpec& m, double tokens_bytes, double nvlink,
                      double nic, double alpha) {
  if (e <= 1 || tokens_bytes <= 0) return 0.0;
  const int domains = (e + local - 1) / local;
  const int per_rank = std::max(1, m.experts / e);
  const double p_rank = expert_group_hit(m.experts, per_rank, m.top_k);
  const double p_domain = expert_group_hit(m.experts, std::min(m.experts, per_rank * local), m.top_k);
  const double inside = tokens_bytes * (local - 1.0) * p_rank * domains;
  const double outside = tokens_bytes * (domains - 1.0) * p_domain;
  return exchange_s(e, inside, outside, nvlink, nic, alpha);
}

std::vector<KernelTime> layer_kernel_times(const workload::JobSpec& job,
                                           const hardware::ComputeModel& compute) {
  const workload::AttentionKernelSpeed kernel = workload::attention_kernel_speed(job, compute.gpu().sm_arch);
  std::vector<KernelTime> out;
  auto add = [&](std::string_view layer, std::string_view pass, const std::vector<Op>& ops) {
    for (const Op& op : ops) {
      KernelTime k;
      k.layer = layer;
      k.pass = pass;
      k.name = op.name;
      k.kind = op.kind == OpKind::gemm ? "gemm" : op.kind == OpKind::attention ? "attention" : "elementwise";
      k.flops = op.flops();
      k.bytes = static_cast<double>(op.bytes);
      k.seconds = op_time(op, compute, kernel);
      out.push_back(std::move(k));
    }
  };
  const workload::LayerOps layer = workload::transformer_layer_ops(job);
  add("transformer", "forward", layer.forward);
  add("transformer", "recompute", layer.recompute);
  add("transformer", "backward", layer.backward);
  if (workload::dense_layers(job.model) > 0) {  // an MoE model's leading dense layers
    const workload::LayerOps dense = workload::transformer_layer_ops(workload::dense_layer_job(job));
    add("dense_transformer", "forward", dense.forward);
    add("dense_transformer", "recompute", dense.recompute);
    add("dense_transformer", "backward", dense.backward);
  }
  const workload::LayerOps output = workload::output_layer_ops(job);
  add("output", "forward", output.forward);
  add("output", "backward", output.backward);
  const workload::LayerOps embed = workload::embedding_ops(job);
  add("embedding", "forward", embed.forward);
  add("embedding", "backward", embed.backward);
  return out;
}

hardware::ComputeModel step_compute_model(const workload::JobSpec& job, const hardware::NodeSpec& node) {
  hardware::ComputeModel compute(node.gpu, node.compute_calibration);
  if (!(node.gpu.sustained_gemm > 0.0)) return compute;
  compute.set_steady(1.0);  // burst speed, no per-kernel throttle
  const workload::AttentionKernelSpeed kernel = workload::attention_kernel_speed(job, compute.gpu().sm_arch);
  hardware::StepKernelMix mix;
  auto add = [&](const workload::LayerOps& ops, double times) {
    for (const std::vector<Op>* pass : {&ops.forward, &ops.recompute, &ops.backward}) {
      for (const Op& op : *pass) {
        const double s = times * op_time(op, compute, kernel);
        (op.kind == OpKind::gemm        ? (op.fp8 ? mix.fp8_gemm : mix.gemm)
         : op.kind == OpKind::attention ? mix.attention
                                        : mix.memory) += s;
      }
    }
  };
  // The whole model's kernels of a micro-batch: every layer, the embedding and the output layer
  // (its logits GEMM and loss weigh in for small models with large vocabularies).
  const auto k = static_cast<double>(workload::dense_layers(job.model));
  add(workload::transformer_layer_ops(job), static_cast<double>(job.model.layers) - k);
  if (k > 0) add(workload::transformer_layer_ops(workload::dense_layer_job(job)), k);
  add(workload::output_layer_ops(job), 1.0);
  add(workload::embedding_ops(job), 1.0);
  compute.set_steady(hardware::sustained_ratio(node.gpu, mix));
  return compute;
}

namespace {

// One kind of transformer layer's costs, per layer and pass (an MoE model's leading dense layers
// are a kind of their own): its kernels, the exposed part of its TP traffic where it runs beside
// them (userbuffers, Megatron's asynchronous backward), its EP / CP exchanges, and the exposed
// copy of its activations to the host (offloading).
struct LayerCosts {
  PassTimes fwd, bwd, rec;
  // The MLP (MoE) block's share of each pass: from mlp_norm on in forward, up to mlp_norm.bwd in
  // backward (the attention block is the rest).
  double fwd_mlp = 0.0, bwd_mlp = 0.0;
  double ep_pass = 0.0, ub_fwd = 0.0, ub_bwd = 0.0, offload_copy = 0.0;
  // The host wait of each forward (and replay) of the layer's expert block (kMoeHostSyncS).
  double host_sync = 0.0;
  std::optional<double> async_bwd;
  CpExposed cp;
};

// What every kind of layer of the job shares: the TP collectives' times and how a chunk's
// recompute and overlap settings expose them.
struct LayerContext {
  LayerContext(const workload::JobSpec& j, const hardware::ComputeModel& c, const hardware::NodeSpec& n,
               const CostParams& p)
      : job(j), compute(c), node(n), params(p) {}
  const workload::JobSpec& job;
  const hardware::ComputeModel& compute;
  const hardware::NodeSpec& node;
  const CostParams& params;
  double nvlink = 0.0, alpha = 0.0, activation = 0.0;
  workload::Recompute recompute = workload::Recompute::none;
  TpPass tp;
  StageCosts copies;          // the eager copy's floor and rate (eager_copy_costs)
  bool ub = false;            // tp_comm_overlap with sequence parallelism
  double ub_replayed = 0.0;   // under it, the gathers an op-level recompute replays (plain)
  double bwd_comm = 0.0;      // the backward's TP collectives with what its recompute replays
  double ep_sm_share = 0.0;   // of the GPU's SMs, what the expert exchange holds beside compute
  bool moe_replayed = false;  // a selective recompute replays the expert block and its exchange
};

LayerCosts layer_costs(const LayerContext& x, const workload::JobSpec& job) {
  LayerCosts L;
  const workload::LayerOps layer = workload::transformer_layer_ops(job);
  const workload::AttentionKernelSpeed kernel =
      workload::attention_kernel_speed(job, x.compute.gpu().sm_arch);
  L.fwd = pass_time(layer.forward, x.compute, kernel);
  L.bwd = pass_time(layer.backward, x.compute, kernel);
  L.rec = pass_time(layer.recompute, x.compute, kernel);
  auto mlp_share = [&](const std::vector<Op>& ops, std::string_view mark, bool from_mark) {
    double s = 0.0;
    bool in = !from_mark;
    for (const Op& op : ops) {
      if (from_mark && op.name == mark) in = true;
      if (in) s += op_time(op, x.compute, kernel);
      if (!from_mark && op.name == mark) in = false;
    }
    return s;
  };
  L.fwd_mlp = mlp_share(layer.forward, "mlp_norm", true);
  L.bwd_mlp = mlp_share(layer.backward, "mlp_norm.bwd", false);
  const std::pair<double, CpPass> ep_cp = ep_cp_pass(job, x.node, x.params, x.nvlink, x.activation);
  L.ep_pass = ep_cp.first;
  L.cp = cp_ring_exposed(job.parallelism.context_parallel, ep_cp.second, L.fwd, L.bwd, L.rec);
  const int t = job.parallelism.tensor_parallel;
  if (x.ub) {
    const TpCollectives u = tp_collectives(job, t, x.activation, x.nvlink, x.alpha);
    if (dtensor_sequence_copies(job)) {  // PyTorch's async TP: the backward's collectives plain
      L.ub_fwd = symmetric_memory_exposed(job, layer, x.compute, u, t, x.activation, x.copies);
      L.ub_bwd = x.tp.backward;
    } else {
      const std::pair<double, double> e = userbuffer_exposed(layer, x.compute, u, t, x.node.gpu.sm_count);
      L.ub_fwd = e.first;
      L.ub_bwd = e.second;
    }
  }
  L.async_bwd = async_tp_backward(job, layer, x.compute, x.node, x.params, x.nvlink, x.alpha,
                                  x.activation);  // Megatron, no userbuffers
  if (job.offload_activation_layers > 0) L.offload_copy = offload_copy_s(job, x.node);
  if (job.moe_host_sync && workload::is_moe(job.model)) L.host_sync = kMoeHostSyncS;
  return L;
}

// Adds n layers of one kind to a chunk's forward f and backward b: n_rec of them recompute their
// forward before backward (full recompute), `off` offload their activations.
void add_layers(const LayerContext& x, const LayerCosts& L, double n, double n_rec, double off, BlockCost& f,
                BlockCost& b) {
  if (n <= 0) return;
  using workload::Recompute;
  const bool full = x.recompute == Recompute::full;
  auto comm_exposed = [&](double comm, double gemm) {
    return x.params.tp_comm_overlap ? std::max(0.0, comm - gemm) : comm;
  };
  // The expert dispatch + combine of a pass (half of ep_pass each): alone, or under Megatron's
  // combined 1F1B schedule (megatron/core/pipeline_parallel/combined_1f1b.py: a forward and a
  // backward of two micro-batches co-scheduled layer by layer, each layer split into attention,
  // dispatch, MLP and combine), beside the other micro-batch's sub-module that runs meanwhile:
  // the forward's dispatch beside the backward's MLP, its combine beside the backward's
  // attention, the backward's combine beside the forward's attention and its dispatch beside
  // the forward's MLP. Exposed what outlasts that compute, which loses the exchange's SMs
  // meanwhile (dispatcher_sm_share).
  const double half = L.ep_pass / 2.0, share = x.ep_sm_share;
  const double ep_f = x.job.moe_a2a_overlap
                          ? beside(half, L.bwd_mlp, share) + beside(half, L.bwd.total - L.bwd_mlp, share)
                          : L.ep_pass;
  const double ep_b = x.job.moe_a2a_overlap
                          ? beside(half, L.fwd.total - L.fwd_mlp, share) + beside(half, L.fwd_mlp, share)
                          : L.ep_pass;
  f.compute_s += n * L.fwd.total;
  f.tp_comm_s += n * ((x.ub ? L.ub_fwd : comm_exposed(x.tp.forward, L.fwd.gemm)) + ep_f + L.cp.forward);
  b.compute_s += n * L.bwd.total + n_rec * L.rec.total;
  // Every layer's backward K/V + dK/dV ring, and the forward ring again in each layer whose
  // attention is recomputed (full: the chunk's first n_rec layers; selective: all). The expert
  // all-to-all waits on the router's output and feeds the expert GEMMs, so nothing of its own
  // micro-batch runs beside it: it is exposed (ep_b, above), and again in a fully recomputed
  // layer.
  // The dispatcher's host wait, in each forward and in each replay of the expert block: with the
  // EP exchange, whose dispatch it holds up.
  const double moe_replays = full ? n_rec : x.moe_replayed ? n : 0.0;
  f.tp_comm_s += n * L.host_sync;
  const double cp_s = n * L.cp.backward + (full ? n_rec : n) * L.cp.recompute;
  const double ep_s = n * ep_b + moe_replays * (L.ep_pass + L.host_sync);
  const double rec_layers = full ? n_rec : 0.0;
  if (x.ub) {
    // Backward's own exchanges, plus the forward's again for each recomputed layer.
    b.tp_comm_s += n * (L.ub_bwd + x.ub_replayed) + rec_layers * L.ub_fwd + cp_s + ep_s;
  } else if (L.async_bwd) {
    // Backward's own collectives, and the forward's again (exposed) per recomputed layer.
    b.tp_comm_s += n * *L.async_bwd + rec_layers * x.tp.forward + cp_s + ep_s;
  } else {
    b.tp_comm_s += (full ? n_rec * comm_exposed(x.bwd_comm, L.bwd.gemm + L.rec.gemm) +
                               (n - n_rec) * comm_exposed(x.tp.backward, L.bwd.gemm)
                         : n * comm_exposed(x.bwd_comm, L.bwd.gemm + L.rec.gemm)) +
                   cp_s + ep_s;
  }
  // Activation offloading (PP 1): each offloaded layer's activations go to the host while the
  // next layer computes (Transformer Engine's double-buffered CPU offload) and come back while
  // the layer after it runs backward; what the copy outlasts is exposed.
  if (off > 0) {
    f.compute_s += off * std::max(0.0, L.offload_copy - L.fwd.total);
    b.compute_s += off * std::max(0.0, L.offload_copy - L.bwd.total);
  }
}

}  // namespace

std::vector<StageCosts> block_costs(const workload::JobSpec& job, const hardware::ComputeModel& compute,
                                    const hardware::NodeSpec& node, const CostParams& params) {
  const auto& par = job.parallelism;
  const int p = par.pipeline_parallel, v = par.virtual_pipeline, t = par.tensor_parallel;
  LayerContext x(job, compute, node, params);
  x.recompute = workload::parse_recompute(job.recompute_granularity);
  // Tensor-parallel collectives per layer and pass, on NVLink, at most at NCCL's ring bandwidth
  // inside the domain (collective/nccl_tuning.h: H100 360 of the wire's 427 GB/s; measured
  // nccl-tests rings 365-370, tests/validation/nccl-tests-h100.json).
  x.nvlink = std::min(
      node.nvlink_rate.bytes_per_second() * params.protocol_efficiency,
      1e9 * collective::ring_intra_busbw(collective::nccl_nvlink_total(node.nvlink_rate.bytes_per_second()),
                                         node.gpu.sm_arch));
  x.alpha = params.step_latency_s + node.nvlink_latency.seconds();
  x.activation = static_cast<double>(job.micro_batch_size) * static_cast<double>(job.model.seq_length) /
                 par.context_parallel * static_cast<double>(job.model.hidden) * 2.0;
  x.copies = eager_copy_costs(compute);
  const StageCosts& copies = x.copies;
  x.tp = tp_pass_times(job, node, params, x.nvlink, x.activation, x.alpha, copies);
  x.ub = params.tp_comm_overlap && t > 1 && par.sequence_parallel;
  const bool op_level =
      x.recompute == workload::Recompute::selective && workload::stack_memory(job).op_level_selective;
  x.ub_replayed = x.ub && op_level ? x.tp.replayed : 0.0;
  x.bwd_comm = x.tp.backward + (x.recompute == workload::Recompute::full ? x.tp.forward
                                : op_level                               ? x.tp.replayed
                                                                         : 0.0);
  x.ep_sm_share = dispatcher_sm_share(job, node);
  x.moe_replayed = x.recompute == workload::Recompute::selective && !op_level &&
                   (workload::selective_modules(job) & workload::recompute_module::moe);
  const LayerCosts moe = layer_costs(x, job);  // every layer of a dense model
  const bool leading_dense = workload::dense_layers(job.model) > 0;
  const LayerCosts dense = leading_dense ? layer_costs(x, workload::dense_layer_job(job)) : moe;
  // With a sliding window the layers above attend through it; the full-attention ones
  // (ModelSpec::full_attention_every) are costed from the model without the window.
  const bool windows = job.model.sliding_window > 0;
  const LayerCosts moe_full = windows ? layer_costs(x, workload::full_attention_job(job)) : moe;
  const LayerCosts dense_full =
      windows && leading_dense ? layer_costs(x, workload::full_attention_job(workload::dense_layer_job(job)))
                               : moe_full;

  const workload::LayerOps embed = workload::embedding_ops(job);
  const workload::LayerOps output = workload::output_layer_ops(job);
  const PassTimes embed_f = pass_time(embed.forward, compute), embed_b = pass_time(embed.backward, compute);
  const PassTimes out_f = pass_time(output.forward, compute), out_b = pass_time(output.backward, compute);

  const double accumulation_bytes = workload::grad_accumulation_bytes_per_param(job);
  std::vector<StageCosts> stages(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s) {
    StageCosts& sc = stages[static_cast<size_t>(s)];
    const double stage_params = init_stage(job, s, sc);
    sc.copy_floor_s = copies.copy_floor_s;
    sc.copy_bytes_per_s = copies.copy_bytes_per_s;
    for (int c = 0; c < v; ++c) {
      const int virtual_stage = c * p + s;
      BlockCost f, b;
      const auto n = static_cast<double>(workload::layers_in_chunk(job, s, c));
      const auto nd = static_cast<double>(workload::dense_layers_in_chunk(job, s, c));
      // Full recompute of only the chunk's first recompute_layers layers (block method); a
      // chunk's leading dense layers come first.
      const double n_rec = x.recompute == workload::Recompute::full
                               ? static_cast<double>(workload::recomputed_layers_in_chunk(job, s, c))
                               : n;
      const double off = std::min<double>(job.offload_activation_layers, n);
      if (windows) {  // layer by layer: which attend through the window depends on the index
        const int64_t first = workload::first_layer_of_chunk(job, s, c);
        for (int64_t j = 0; j < static_cast<int64_t>(n); ++j) {
          const bool windowed = workload::windowed_layer(job.model, first + j);
          const LayerCosts& L =
              static_cast<double>(j) < nd ? (windowed ? dense : dense_full) : (windowed ? moe : moe_full);
          add_layers(x, L, 1.0, static_cast<double>(j) < n_rec ? 1.0 : 0.0,
                     static_cast<double>(j) < off ? 1.0 : 0.0, f, b);
        }
      } else {
        add_layers(x, dense, nd, std::min(nd, n_rec), std::min(nd, off), f, b);
        add_layers(x, moe, n - nd, n_rec - std::min(nd, n_rec), off - std::min(nd, off), f, b);
      }
      if (virtual_stage == 0) {
        f.compute_s += embed_f.total;
        b.compute_s += embed_b.total;
      }
      if (virtual_stage == p * v - 1) {
        f.compute_s += out_f.total;
        b.compute_s += out_b.total;
      }
      if (accumulation_bytes > 0) {  // gradients added into the kept ones after the backward (memory.h)
        b.compute_s +=
            compute
                .elementwise_time(sim::Bytes{static_cast<int64_t>(sc.params_per_chunk * accumulation_bytes)})
                .seconds();
      }
      sc.forward[static_cast<size_t>(c)] = f;
      sc.backward[static_cast<size_t>(c)] = b;
    }
    // ZeRO shards the dense state over DP x CP and the experts' over their own data-parallel
    // group (memory.cpp model_state_bytes; Megatron's distributed optimizer shards each buffer
    // over the group that reduces it).
    const double shard = par.zero_stage >= 1 ? par.data_parallel * par.context_parallel : 1;
    const double expert_params = sc.expert_params_per_chunk * static_cast<double>(v);
    const double expert_shard = par.zero_stage >= 1 ? shard * workload::expert_shard_ratio(par) : 1.0;
    const double optimizer_bytes = ((stage_params - expert_params) / shard + expert_params / expert_shard) *
                                   optimizer_bytes_per_parameter(job);
    sc.optimizer_s = compute.elementwise_time(sim::Bytes{static_cast<int64_t>(optimizer_bytes)}).seconds();
  }
  return stages;
}

}  // namespace ct::replay
