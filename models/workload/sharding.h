// How a training stack gathers and reduces the parameters of one layer under ZeRO-3 / FSDP
// (full sharding), for the step program (models/replay/step_program.h). Sources per stack:
//
//  FSDP2 (torchtitan, pytorch, and megatron-core's own FSDP): each transformer block is one
//    unit; its parameters are gathered by one all_gather_into_tensor over a flat buffer and
//    its gradients reduced by one reduce_scatter_tensor (torch fully_shard docstring: a
//    unit's parameters and gradients are "communicated together in one collective"), on
//    separate all-gather and reduce-scatter streams, one unit prefetched ahead in forward
//    (implicit) and in backward (explicit).
//  deepspeed (v0.6 and later): a submodule's parameters are fetched with one coalesced
//    all-gather when it runs (partition_parameters.py _allgather_params_coalesced, PR #1453),
//    the next submodule prefetched (stage3_prefetch_bucket_size 5e7 elements: every weight of a
//    large model is bigger, so exactly one), norms below stage3_param_persistence_threshold
//    (1e5 elements) kept whole; gradients reduce-scattered per reduce_bucket_size (5e8
//    elements) bucket on the reduction stream (overlap_comm), every micro-batch.
//  deepspeed-2021 (v0.3.13 to v0.5.x, the ZeRO-3 of Narayanan et al. SC'21 Table 2): one
//    list-API all_gather per parameter tensor, each preceded by torch.cuda.synchronize() so
//    that it starts only when every kernel queued before it (compute and reductions) is done
//    (partition_parameters.py _allgather_param; stage3.py fetch_sub_module), no effective
//    prefetch; one reduce-scatter per parameter every micro-batch (partition_parameters.py
//    reduce-scatter per param, engine.py every micro-step). Both through PyTorch's list API
//    (torch.distributed.all_gather(list of world_size views) / reduce_scatter(out, list)):
//    ProcessGroupNCCL flattens, runs the NCCL call on its stream, and copies each of the
//    world_size slices out (all_gather) or in (reduce_scatter) with one copy_ each, issued by
//    the calling thread (pytorch/pytorch torch/lib/c10d/ProcessGroupNCCL.cpp, v1.8: "Copy the
//    flattened output tensors to the outputs"); each gather first zeroes its full-size
//    buffer (torch.zeros(aligned_param_size)). The cost grows with the group, not the bytes.
// Both DeepSpeed versions release a gathered module after it runs unless it is used again
// within stage3_max_reuse_distance (1e9 elements, the default from v0.3.13 on) of other
// parameters (stage3.py PartitionedParameterCoordinator.release_sub_module / _keep_for_later,
// the distance summed over the module trace). Their hooks sit on every submodule, so under
// full recompute the checkpointed forward run in backward gathers each module again, and the
// module is released before its own backward when the modules after it in the layer, run
// forward and then backward, hold 1e9 parameters or more (2 x the parameters after it): then
// its backward gathers it a third time. FSDP2 gathers a unit once for backward (its hooks sit
// on the unit, outside the checkpoint wrapper). recompute_gather_fractions lists the extra
// backward gathers of a module.
// A layer's modules in forward order: QKV, output projection, MLP in (gate + up fused), MLP
// out; each module's compute share is its share of the layer's weight-matrix parameters
// (matmul FLOPs), the attention core riding with the projections.
#pragma once

#include <vector>

#include "models/workload/model_spec.h"

namespace ct::workload {

struct ModuleFetch {
  double compute_fraction = 1.0;         // of the layer's pass that waits for this module
  std::vector<double> gather_fractions;  // one all-gather each, as shares of the layer's parameters
  // Extra gathers of the backward pass under full recompute (DeepSpeed, above), same units.
  std::vector<double> recompute_gather_fractions;
};

struct Zero3Plan {
  std::vector<ModuleFetch> modules;  // one layer, forward order
  int prefetch = 1;                  // modules gathered ahead of the running one
  bool device_sync = false;          // a gather waits for every earlier kernel and reduction
  bool reduce_per_gather = false;    // one reduce-scatter per gathered tensor
  // PyTorch's list-API all_gather / reduce_scatter (DeepSpeed 2021, below): each gather zeroes
  // its full-size buffer first, and each collective copies every rank's slice to (gather) or
  // from (reduce-scatter) a flat buffer, one eager copy per rank issued by the training thread.
  bool list_api = false;
  double reduce_bucket_params = 0;  // otherwise: reduce when this many gradients wait (0: per layer)
  double reduce_bytes = 4;          // per parameter of a reduce-scatter
  // HBM bytes per parameter that the stack's own copies move around each collective, in the
  // compute stream (see the stack notes above zero3_plan): after a gather, per byte gathered
  // per parameter (gather_copy_per_byte x gathered bytes: read and write); before a
  // reduce-scatter, per parameter reduced.
  double gather_copy_per_byte = 0;
  double reduce_prep_bytes = 0;
};

// The copies FSDP makes around its collectives (gather_copy_per_byte, reduce_prep_bytes):
//  FSDP2 (torchtitan, pytorch): after each unit's all-gather, foreach_all_gather_copy_out splits
//    the gathered flat buffer into the parameters' own tensors (torch.split_with_sizes_copy:
//    read and write the gathered bytes), and before its reduce-scatter foreach_reduce copies the
//    unsharded gradients into the reduce-scatter input in the reduce dtype
//    (foreach_reduce_scatter_copy_in, torch._chunk_cat: read 2, write reduce_bytes), both on
//    the current (compute) stream; the division is NCCL's AVG for fp32 and bf16, no kernel
//    (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, torch 2.4-2.7).
//  FSDP1 (composer: Composer's FSDP of torch 2.0-2.1): the gather lands in the flat parameter
//    (no copy); after a unit's backward its post-backward hook casts the unsharded gradient to
//    the reduce dtype when that differs (flat_param.grad.to(reduce_dtype): read 2, write 4 with
//    Composer's mixed_precision DEFAULT) and divides it by the gradient predivide factor
//    (> 1 for any world size >= 2: read and write reduce_bytes) before the reduce-scatter
//    (torch/distributed/fsdp/_runtime_utils.py _post_backward_hook, default reduce_scatter_hook).
//    FSDP1 runs them on its post-backward stream beside the next unit's backward; the twin has
//    no concurrent model of element-wise kernels, so it runs them in the compute stream (an
//    upper bound of their cost).
//  DeepSpeed and megatron-core's FSDP: none here (DeepSpeed 2021's list-API copies are
//    list_api; megatron-core accumulates into its fp32 gradient buffer).
// Throws std::invalid_argument for an unknown stack (see parse_stack).
Zero3Plan zero3_plan(const JobSpec& job);

}  // namespace ct::workload
