// Durations of the compute blocks a step is made of, per pipeline stage and model chunk.
//
// A block is one pass (forward, or recompute + backward) of one model chunk over one
// micro-batch on one rank. Its time is the sum over its layers' kernels of the calibrated
// compute model (GEMM, attention, element-wise), plus the tensor-parallel collectives those
// layers issue, which run on the NVSwitch domain (node.nvlink_domain: the node, or an NVL72
// rack; a non-blocking crossbar no other traffic of the step uses when TP spans it):
//   with sequence parallelism, per layer and pass: 2 all-gathers + 2 reduce-scatters of
//     S = b s h x 2 bytes,  each  (t-1) (alpha) + (t-1)/t S / (B_nvlink x eff);
//   without: 2 all-reduces, each 2 (t-1) alpha + 2 (t-1)/t S / (B_nvlink x eff).
//   Full recompute repeats the forward collectives before backward.
//   With tp_comm_overlap the collectives hide behind the layer's GEMMs:
//     exposed = max(0, t_comm - t_gemm) per layer (per pass).
//   Without it, Megatron's stacks (job.tp_async_backward) run the backward collectives of the
//   column-parallel linears beside their GEMMs (block_costs.cpp, async_tp_backward): the input
//   gradient's all-reduce under the weight-gradient GEMM, or with SP the input's all-gather
//   under the input-gradient GEMM and the reduce-scatter under the weight-gradient GEMM.
// Expert-parallel all-to-all (dispatch + combine, per MoE layer and pass) and context-
// parallel ring exchange of K/V (per layer and pass) are costed the same way on the
// bottleneck of their group (NVLink inside the NVLink domain, the NIC otherwise).
// The first virtual stage adds the embedding, the last the output layer and loss.
// The optimizer block is Adam over this rank's parameter shard:
//   bytes = shard x 32 (read fp32 param, grad, m, v; write param, m, v; write bf16 copy).
#pragma once

#include <string>
#include <vector>

#include "models/hardware/compute_model.h"
#include "models/hardware/node.h"
#include "models/workload/model_spec.h"

namespace ct::replay {

// The host wait of one MoE layer's forward under Megatron's token dispatchers (job.moe_host_sync).
// The dispatcher moves the per-expert token counts to the host and waits for them before the
// experts run (megatron/core/transformer/moe/token_dispatcher.py at d98e8a6:
// _maybe_dtoh_and_synchronize, d2h_event.synchronize(), unless drop-and-pad; HybridEP's blocking
// dispatch drains the compute stream after its metadata preprocessing unless given
// num_permuted_tokens, fused_a2a.py; DeepEP's normal dispatch has "an implicit CPU wait for GPU
// received count signal", deepseek-ai/DeepEP docs/legacy.md @ dd758ca), so the GPU runs dry and
// then waits while the host issues the rest of the layer. The sync-free path (NVIDIA's CuTe DSL
// fused grouped MLP with full-iteration CUDA graphs) removes it; NVIDIA credits that path with +93%
// end to end on GPT-OSS and +8% on DeepSeek-V3 ("Boosting MoE Training Throughput with Advanced
// Fusion Kernels", NVIDIA developer blog, 2026-06-15). How long the host takes is not published:
// 1.5 ms per MoE layer forward is fitted on the megatron-bridge-moe-h100 validation set
// (Qwen3-30B-A3B on 16 H100 with four dispatcher and overlap variants, whose steps exceed the
// twin's without it by 1.5-3.4 ms per layer and micro-batch; 1.5 ms minimises that set's mean
// error, in steps of 0.25 ms) and that set is labelled fitted. The same layout's Nsight profile
// (Megatron-Bridge skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md @ 067f987, HybridEP, overlap
// off) shows where it goes: 1.89 s of idle GPU per 24.71 s step (GPU-active union 22.82 s) and 3.11
// s in HybridEP's metadata preprocessing, 0.62 + 1.01 ms per layer and micro-batch. The other MoE
// sets validate it: on Megatron-Bridge's 26.06 table every sync-free row (full-iteration graphs)
// sat at 0.81-1.17x the published step without it and every synchronising one at 1.24-1.92x
// (README.md, Validation, the MoE host sync item).
inline constexpr double kMoeHostSyncS = 1.5e-3;

struct BlockCost {
  double compute_s = 0.0;  // kernels
  double tp_comm_s = 0.0;  // exposed TP / EP / CP collectives inside the block
  [[nodiscard]] double total_s() const { return compute_s + tp_comm_s; }
};

struct StageCosts {
  std::vector<BlockCost> forward;   // per chunk
  std::vector<BlockCost> backward;  // per chunk (recompute included)
  double optimizer_s = 0.0;
  double params_per_chunk = 0.0;  // parameters held by this rank per chunk (for DP bytes)
  // Of those, the experts' (MoE): their gradients and gathers go over the expert
  // data-parallel group (TP x CP x DP / (EP x ETP) ranks), not the dense one.
  double expert_params_per_chunk = 0.0;
  // Bytes per parameter of its data-parallel parameter all-gather: 2 (bf16), less with FP8
  // primary weights (job.fp8_params: linear weights gathered in FP8, the rest in bf16).
  double gather_bytes_per_param = 2.0;
  // One eager PyTorch copy (or fill) moving `bytes`: the calibration's streaming-kernel floor
  // (one small element-wise op back to back, 10.3 us on the H200 host) plus the bytes at the
  // streaming rate. The per-rank copies of list-API collectives (workload/sharding.h).
  double copy_floor_s = 0.0;
  double copy_bytes_per_s = 0.0;
  [[nodiscard]] double copy_s(double bytes) const {
    return copy_floor_s + (copy_bytes_per_s > 0.0 ? bytes / copy_bytes_per_s : 0.0);
  }
};

struct CostParams {
  double protocol_efficiency = 0.95;
  double step_latency_s = 3e-6;   // per collective step (launch, sync)
  double nic_bytes_per_s = 50e9;  // per GPU, for EP/CP groups that leave the node
  bool tp_comm_overlap = false;
};

// One kernel of a block, as block_costs() times it: the pass (forward, backward, recompute), the
// layer (transformer, dense_transformer: an MoE model's leading dense layers, output: final
// norm + logits + loss, embedding), the op's name and kind
// (gemm, attention, elementwise), its FLOPs and HBM bytes (element-wise), and seconds on the
// calibrated compute model with the job's attention kernel.
struct KernelTime {
  std::string layer, pass, name, kind;
  double flops = 0.0, bytes = 0.0, seconds = 0.0;
};
// Every kernel of one transformer layer, the output layer and the embedding, per micro-batch
// and TP rank (collectives excluded: they are not kernels of the compute model).
std::vector<KernelTime> layer_kernel_times(const workload::JobSpec& job,
                                           const hardware::ComputeModel& compute);

// The compute model a training step runs on: the node's GPU and calibration at the step's
// steady-state ratio under the power limit (hardware::sustained_ratio), from the time a
// micro-batch's forward, recompute and backward (every layer, the embedding and the output
// layer) spend in GEMMs, attention and memory-bound kernels at burst speed. GPUs without a
// steady-state measurement keep the calibration's per-kernel throttle (steady() == 0).
hardware::ComputeModel step_compute_model(const workload::JobSpec& job, const hardware::NodeSpec& node);

// One dispatch (or combine) of the flex dispatcher's token-based kernels (DeepEP, HybridEP) among
// e expert-parallel ranks, `local` of them per NVLink domain, for `tokens_bytes` of tokens a rank
// (tokens x bytes per token), seconds: a token goes once to each GPU that holds one of its
// experts and once to each other domain that does (forwarded over NVLink there), at `nvlink` and
// `nic` bytes/s per GPU, `alpha` seconds per peer. block_costs.cpp says where each term comes
// from; test_replay.cpp checks it against DeepEP's published internode bandwidths.
double token_dispatch(int e, int local, const workload::MoeSpec& m, double tokens_bytes, double nvlink,
                      double nic, double alpha);

// One entry per pipeline stage.
std::vector<StageCosts> block_costs(const workload::JobSpec& job, const hardware::ComputeModel& compute,
                                    const hardware::NodeSpec& node, const CostParams& params);

}  // namespace ct::replay
