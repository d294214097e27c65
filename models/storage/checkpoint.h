// Size of one training checkpoint, in total and per GPU.
//
// Content (mixed precision with Adam, Megatron-LM / ZeRO conventions as in
// models/workload/memory.h):
//   weights    w = 2 bytes/param (bf16)
//   optimizer  o = 12 bytes/param (fp32 master weights + Adam m + v)
//   extra      x = RNG states (CPU + CUDA) and data-loader position per GPU (default 1 MiB;
//              a few KiB in practice, rounded up generously)
//   total      = (w + o) N + x G            (N = total parameters, G = GPUs)
// Gradients are not saved. A tied embedding's copy on the last pipeline stage is saved once.
// Who writes what (each distinct shard is written exactly once): TP, PP and EP split every
// tensor, so a rank of stage i owns P_i = dense_i + expert_i parameters
// (workload::stage_parameters). Those are replicated over d = DP x CP (d / EP for experts):
//   ZeRO >= 1 (distributed optimizer): optimizer shard o (dense_i / d + expert_i / (d/EP))
//     written by every rank; ZeRO 3 also shards the weights that way;
//     otherwise the weights w P_i are written by data-parallel rank 0 only.
//   ZeRO 0: data-parallel rank 0 writes (w + o) P_i; the other replicas write nothing.
//   fully_parallel_save (Megatron --ckpt-fully-parallel-save): the replicated weights are
//     also split evenly over the d replicas: every rank writes (w + o)(dense_i/d + expert_i/(d/EP)).
// per_gpu_bytes is the largest amount one GPU writes (+ x); writers the GPUs that write
// model state (every GPU still writes its small extra state).
#pragma once

#include <cstdint>

#include "models/workload/model_spec.h"

namespace ct::storage {

struct CheckpointOptions {
  int64_t weight_bytes_per_param = 2;
  int64_t optimizer_bytes_per_param = 12;
  int64_t extra_bytes_per_gpu = int64_t{1} << 20;
  bool fully_parallel_save = false;
};

struct CheckpointSize {
  int64_t weights_bytes = 0;    // w N
  int64_t optimizer_bytes = 0;  // o N
  int64_t extra_bytes = 0;      // x G
  int64_t total_bytes = 0;      // one checkpoint on storage
  int64_t per_gpu_bytes = 0;    // the most one GPU writes (and reads back on restore)
  int64_t gpus = 0;             // G = TP x PP x DP x CP
  int64_t writers = 0;          // GPUs that write model state
  int writer_nodes = 0;         // nodes holding a writer (storage clients that write)
  int nodes = 0;                // nodes of the job
  [[nodiscard]] double total_bytes_as_double() const { return static_cast<double>(total_bytes); }
};

// Throws std::invalid_argument for a job without GPUs or parameters.
CheckpointSize checkpoint_size(const workload::JobSpec& job, int gpus_per_node,
                               const CheckpointOptions& options = {});

}  // namespace ct::storage
