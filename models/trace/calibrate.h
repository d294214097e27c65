// Calibration from a profiled step: kernel samples from a Kineto trace (shapes from its
// record_shapes fields or, better, from the execution trace of the same step), the compute
// model fitted to them with hardware::fit_calibration_from, and a GPU file (gpu_file.h).
//
// Samples. Every GPU event of the device belongs to the operator that launched it (launch
// correlation -> External id); an operator's duration is the sum of its GPU events. Its shapes
// (op_work.h) make it a sample of one family:
//   GEMM: 16-bit mm/addmm/bmm/baddbmm/linear/matmul, key (M, N, K, count);
//   attention: causal forward and backward ops, key (b, h, s, d); a key needs both passes
//     (fwd_s = median forward, fwdbwd_s = that + median backward); non-causal ones are skipped
//     (the fitter is causal-only);
//   element-wise: memory-bound ops that launched exactly one GPU event, key (op, bytes moved);
//     without the execution trace only in-place ops (outputs are unknown).
// One sample per key, its median duration, keys in sorted order (so the fitter's one-in-four
// hold-out holds out whole shapes). Operators of other kinds, fp32 GEMMs and multi-kernel
// memory ops (fused optimizers) are counted as skipped.
//
// Fit. The parameters start from the base GPU's built-in calibration (Calibration::h200(),
// the only measured one); a family with no sample keeps them (fit "fitted": false). Kineto
// durations are GPU execution only: the fitted launch floors are the GPU's own (a few us),
// whereas the built-in calibration's floors come from CUDA-event per-call timings and include
// the CPU launch cost.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/hardware/kernel_data.h"
#include "models/trace/gpu_file.h"

namespace ct::trace {

struct CalibrateOptions {
  std::string gpu;              // catalog name of the base GPU; "" = from the trace's device name
  std::string execution_trace;  // "" = shapes from Kineto's record_shapes fields
  int device = -1;              // -1 = the only device of the trace
};

struct CalibrateResult {
  GpuFile file;
  hardware::KernelMeasurements samples;
  double wall_s = 0;
};

// Throws TraceError ("trace.path: ..." / "trace.execution_trace: ..." / "--gpu: ...").
CalibrateResult calibrate(const std::string& kineto_path, const CalibrateOptions& options = {});

// The catalog name for a CUDA device name ("NVIDIA H200" -> "H200-SXM"), "" when unknown.
std::string catalog_gpu_for(const std::string& device_name, double memory_bytes);

}  // namespace ct::trace
