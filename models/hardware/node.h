// One server: its GPUs, NICs, NVLink and PCIe. Plain data plus a validity check.
#pragma once

#include "models/hardware/compute_model.h"
#include "models/hardware/gpu_catalog.h"
#include "sim/units.h"

namespace ct::hardware {

struct NodeSpec {
  GpuSpec gpu;
  // Compute-model parameters of the GPU: the built-in H200 fit (scaled to other GPUs by
  // their peaks), or a fit to a trace (scenario key cluster.gpu_file).
  Calibration compute_calibration = Calibration::h200();
  int gpus_per_node = 8;
  int nics_per_node = 8;
  ct::sim::Bandwidth nic_rate;      // per NIC, per direction
  ct::sim::Bandwidth nvlink_rate;   // per GPU, per direction
  ct::sim::Duration nvlink_latency;
  ct::sim::Bandwidth pcie_rate;     // per GPU-NIC PCIe path, per direction

  // Throws std::invalid_argument naming the offending field: the GPU spec must be valid,
  // counts and rates positive, latency non-negative, and nics_per_node must divide
  // gpus_per_node (one NIC per GPU, or one NIC shared by an equal number of GPUs).
  void validate() const;
};

}  // namespace ct::hardware
