// Measured kernel timings (the calibration file), loaded from JSON.
//
// Format (see the file's "about"): gemm_bf16 [{M, N, K, s}], sdpa_causal_bf16
// [{batch, heads, seq, head_dim, fwd_s, fwdbwd_s}], elementwise_bf16 [{op, elements, s}] where
// bytes moved = 4 * elements (bf16 read + write), hbm_copy_GBps (read + write GB/s).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/hardware/compute_model.h"

namespace ct::hardware {

struct GemmSample {
  int64_t m = 0, n = 0, k = 0;
  double seconds = 0.0;
  int64_t count = 1;  // same-shape problems in one launch (batched GEMM)
};

struct AttentionSample {
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  double fwd_seconds = 0.0, fwdbwd_seconds = 0.0;
};

struct ElementwiseSample {
  std::string op;  // as in the file: layernorm, gelu, add, softmax, ...
  MemoryOp op_class = MemoryOp::streaming;
  int64_t elements = 0;
  int64_t bytes_moved = 0;
  double seconds = 0.0;
};

struct KernelMeasurements {
  std::string device;
  int sm_count = 0;
  double hbm_copy_bytes_per_s = 0.0;
  std::vector<GemmSample> gemm;
  std::vector<AttentionSample> attention;  // causal
  std::vector<ElementwiseSample> elementwise;
};

// The op class of a measured op name; throws std::invalid_argument for an unknown name.
MemoryOp memory_op_class(const std::string& op);

// Throws std::runtime_error if the file cannot be read or a field is missing or not positive.
KernelMeasurements load_kernel_measurements(const std::string& path);

}  // namespace ct::hardware
