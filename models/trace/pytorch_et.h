// A rank's step graph from the PyTorch execution trace (ET) and the Kineto profile of the same
// step: operators, their data dependencies and measured GPU kernels, kernels the profile lacks
// filled in by the calibrated compute model, and the CPU launch timeline modelled rather than
// replayed. Rules and maths: pytorch_et.cpp and launch_model.h. Errors are TraceErrors that
// start with "trace.path: " (the Kineto file) or "trace.execution_trace: " (the ET) and name
// the file and, for content, the node.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "models/hardware/compute_model.h"
#include "models/hardware/gpu_catalog.h"
#include "models/replay/step_program.h"

namespace ct::trace {

struct EtImportOptions {
  int device = -1;  // GPU of the Kineto trace to import; -1 = the only one
  // The compute model that fills missing kernels and classifies compute/memory-bound work.
  hardware::GpuSpec gpu = hardware::gpu("H200-SXM");
  hardware::Calibration calibration = hardware::Calibration::h200();
  // The profiler's cost at each recorded operator, removed from the CPU timeline
  // (op_overhead.h): < 0 estimates it from the trace, 0 removes nothing, > 0 is given (us).
  double profiler_op_overhead_us = -1;
  // What-if: replay the step on another GPU. Every measured GPU op the compute model can
  // take (op_work.h) runs for its measured time x T_target(op) / T_recorded(op), both from
  // the compute model (`gpu`/`calibration` describe the recorded GPU); other measured kernels
  // scale with the HBM bandwidth ratio (recorded / target); NCCL kernels and the CPU
  // timeline (same host, same launches) are kept; fills use the target model.
  bool what_if = false;
  hardware::GpuSpec target_gpu = hardware::gpu("H200-SXM");
  hardware::Calibration target_calibration = hardware::Calibration::h200();
  // What-if: the micro-batch times batch_scale. The recorded batch b and sequence s are those
  // of the first modelled attention op (error without one); in every tensor of every op a
  // leading dimension equal to b, and any dimension equal to the tokens b x s, is scaled, and
  // the op's measured time is multiplied by T_model(scaled shapes) / T_model(recorded
  // shapes) (the target GPU's model for the scaled shapes when what_if is also set). Ops the
  // model cannot take keep their time; weights and optimizer states keep their shapes
  // (their dimensions are neither b nor b x s); the CPU timeline is kept.
  double batch_scale = 1.0;
};

struct EtImportStats {
  int et_nodes = 0;
  int kineto_ops = 0;   // cpu_op and user_annotation events of the Kineto trace
  int ops_matched = 0;  // ET nodes matched to a Kineto op (rf_id = Record function id)
  int gpu_ops = 0;      // ET ops that launched measured GPU events
  int kernels = 0, memsets = 0, memcpys = 0, nccl_kernels = 0;
  int kernels_outside_et = 0;  // GPU events on the device launched by no ET op (not replayed)
  int filled_by_compute_model = 0;
  std::map<std::string, int> filled_ops;  // name -> count
  std::map<std::string, int>
      not_modelled;      // GPU-class ops without kernels the model cannot take: "name: why"
  int dependencies = 0;  // data dependencies between GPU ops (through storages)
  int joins = 0;         // join instructions for ops with more than two producers
  int streams = 0;       // CUDA streams of the measured kernels
  double overlap_s = 0;  // measured kernel overlap across streams (kept in the replay)
  int forward = 0, backward = 0, optimizer = 0;  // GPU instructions by category
  double measured_gpu_s = 0, filled_s = 0;
  double compute_bound_s = 0, memory_bound_s = 0, other_gpu_s = 0;  // by op (op_work.h)
  double step_s = 0;                                                // the modelled step (launch_model.h)
  double idle_s = 0, gpu_gap_idle_s = 0, launch_bound_idle_s = 0;
  double before_first_launch_s = 0, after_last_kernel_s = 0;
  double profiler_overhead_removed_s = 0, sync_wait_s = 0;
  double profiler_op_overhead_us = 0;    // per recorded operator (op_overhead.h)
  int profiler_op_overhead_samples = 0;  // clean sibling gaps it was estimated from
  bool profiler_op_overhead_estimated = false;
  double measured_span_s = 0;                    // first to last measured GPU event of the step, as profiled
  int what_if_model_scaled = 0;                  // what-if: ops scaled by the compute model's ratio
  int what_if_bandwidth_scaled = 0;              // what-if: ops scaled by the HBM bandwidth ratio
  int batch_scaled_ops = 0;                      // what-if batch: ops whose shapes carried the batch
  int64_t recorded_batch = 0, recorded_seq = 0;  // found for batch_scale != 1
};

replay::StepProgram import_pytorch_et(const std::string& kineto_path, const std::string& et_path,
                                      const EtImportOptions& options = {}, EtImportStats* stats = nullptr);

// The stats as a report object (seconds and counts; shares of the step for compute-bound,
// memory-bound, other GPU work and idle).
nlohmann::json to_json(const EtImportStats& stats);

}  // namespace ct::trace
