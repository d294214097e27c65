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
  ct::sim::Bandwidth nic_rate;     // per NIC, per direction
  ct::sim::Bandwidth nvlink_rate;  // per GPU, per direction
  ct::sim::Duration nvlink_latency;
  ct::sim::Bandwidth pcie_rate;  // per GPU-NIC PCIe path, per direction
  // GPUs of one NVLink switch domain, consecutive global ranks (GB200/GB300 NVL72: 72, i.e.
  // 18 nodes of 4); 0 = the node. A multiple of gpus_per_node: a node never straddles two.
  int nvlink_domain = 0;
  [[nodiscard]] int nvlink_domain_gpus() const { return nvlink_domain > 0 ? nvlink_domain : gpus_per_node; }

  // Throws std::invalid_argument naming the offending field: the GPU spec must be valid,
  // counts and rates positive, latency non-negative, and nics_per_node must divide
  // gpus_per_node (one NIC per GPU, or one NIC shared by an equal number of GPUs), and
  // nvlink_domain a multiple of gpus_per_node.
  void validate() const;
};

}  // namespace ct::hardware
