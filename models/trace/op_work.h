// What GPU work a PyTorch operator does, from its name and argument shapes: the families of the
// compute model (models/hardware/compute_model.h).
//
// GEMM (bf16/fp16 operands; the model is bf16 and fp16 runs at the same tensor-core rate):
//   mm(A[M,K], B[K,N]); addmm(bias, A[M,K], B[K,N]); bmm(A[b,M,K], B[b,K,N]) and
//   baddbmm(C, A, B): count = b; linear(x[..., K], W[N,K], bias?): M = numel(x) / K;
//   matmul(x, y): y 2-D [K,N] -> M = numel(x) / K; both >= 3-D -> count = product of x's batch
//   dims, [M,K] x [K,N] from the last two. F = 2 M N K count, bytes = 2 (MK + KN + MN) count.
// Attention: the query is [b, h, s, d] (flash/efficient kernels' internal ops: [b, s, h, d]);
//   causal from the is_causal argument (custom_mask_type != 0 for the efficient kernels); at
//   the argument positions of PyTorch 2.x's native_functions.yaml (table in op_work.cpp).
//   F_fwd = 4 b h s^2 d (halved when causal), F_bwd = 2.5 F_fwd; bytes = q, k, v, out (and their
//   gradients for the backward) in bf16.
// Memory-bound (element-wise, reductions, copies, norms, softmax, fused optimizers): bytes
//   moved = every defined tensor input + every output (read + write); copy_, fill_ and zero_
//   do not read their destination (self). Without outputs (Kineto only), an in-place op
//   (name ending in '_') writes its self; any other is not modelled (output size unknown).
//   Class (compute_model.h MemoryOp): normalization for layer/rms/group norm, softmax for
//   (log_)softmax and their backward, streaming for the rest.
// Other operators (views, allocation, indexing, losses, embedding backward, ...) are kind
// none: they are not assumed to launch GPU work, and a measured kernel of one is kept as is.
//
// Compute-bound: a GEMM or attention whose arithmetic intensity F / bytes is at least the GPU's
// ridge point peak_bf16 / hbm_bandwidth; every memory-bound op and low-intensity GEMM is
// memory-bound.
#pragma once

#include <cstdint>
#include <string>

#include "models/hardware/compute_model.h"
#include "models/trace/op_view.h"

namespace ct::trace {

struct OpWork {
  enum class Kind { none, gemm, attention_forward, attention_backward, memory } kind = Kind::none;
  bool modelled = false;  // shapes usable by the compute model; else `why` says what is missing
  std::string why;
  int64_t m = 0, n = 0, k = 0, count = 1;               // gemm
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;  // attention
  bool causal = false;
  hardware::MemoryOp memory_class = hardware::MemoryOp::streaming;
  std::string memory_op;  // the name without "aten::", e.g. "add_", "native_layer_norm"
  double flops = 0, bytes = 0;
};

OpWork op_work(const OpView& op);

// Kernel time the compute model gives the op (requires work.modelled).
double modelled_seconds(const OpWork& work, const hardware::ComputeModel& model);

// See the header: GEMM/attention at or above the ridge point.
bool compute_bound(const OpWork& work, const hardware::GpuSpec& gpu);

}  // namespace ct::trace
