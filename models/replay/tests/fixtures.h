// Small clusters and jobs for replay tests.
#pragma once

#include "models/hardware/gpu_catalog.h"
#include "models/replay/step_model.h"

namespace ct::replay::testing {

inline network::ClusterSpec small_cluster(int nodes, const char* gpu = "H100-SXM") {
  network::ClusterSpec c;
  c.node.gpu = hardware::gpu(gpu);
  c.node.gpus_per_node = 8;
  c.node.nics_per_node = 8;
  c.node.nic_rate = sim::Bandwidth::gbps(400);
  c.node.nvlink_rate = sim::Bandwidth::bytes_per_s(450e9);
  c.node.nvlink_latency = sim::Duration::us(1);
  c.node.pcie_rate = sim::Bandwidth::bytes_per_s(64e9);
  c.nodes = nodes;
  c.fabric.topology = "rail_optimized";
  c.fabric.tiers = 2;
  c.fabric.switch_radix = 64;
  c.fabric.nodes = nodes;
  c.fabric.nics_per_node = 8;
  c.fabric.link_rate = c.node.nic_rate;
  return c;
}

// Selene (Narayanan et al. SC'21): DGX A100 80GB, 8 x 200 Gb/s HDR InfiniBand per node, a
// 3-tier fat tree of 40-port Quantum switches, NVLink 3 at 300 GB/s per direction.
inline network::ClusterSpec selene(int gpus) {
  network::ClusterSpec c;
  c.node.gpu = hardware::gpu("A100-80GB");
  c.node.gpus_per_node = 8;
  c.node.nics_per_node = 8;
  c.node.nic_rate = sim::Bandwidth::gbps(200);
  c.node.nvlink_rate = sim::Bandwidth::bytes_per_s(300e9);
  c.node.nvlink_latency = sim::Duration::us(1);
  c.node.pcie_rate = sim::Bandwidth::bytes_per_s(32e9);  // PCIe Gen4 x16
  c.nodes = gpus / 8;
  c.fabric.topology = "fat_tree";
  c.fabric.tiers = 3;
  c.fabric.switch_radix = 40;
  c.fabric.routing = "dmodk";  // HDR InfiniBand: the subnet manager's destination routes
  c.fabric.nodes = c.nodes;
  c.fabric.nics_per_node = 8;
  c.fabric.link_rate = c.node.nic_rate;
  return c;
}

inline workload::JobSpec small_job(int tp, int pp, int dp, int v = 1, int64_t gbs = 64) {
  workload::JobSpec j;
  j.model.layers = 16;
  j.model.hidden = 4096;
  j.model.heads = 32;
  j.model.seq_length = 2048;
  j.model.vocab = 51200;
  j.parallelism.tensor_parallel = tp;
  j.parallelism.pipeline_parallel = pp;
  j.parallelism.data_parallel = dp;
  j.parallelism.virtual_pipeline = v;
  j.global_batch_size = gbs;
  j.micro_batch_size = 1;
  j.recompute_granularity = "selective";
  return j;
}

}  // namespace ct::replay::testing
