// Shared helpers of the network tests: an H100 node and small clusters.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "models/hardware/gpu_catalog.h"
#include "models/network/cluster.h"
#include "models/network/network.h"
#include "sim/simulation.h"

namespace ct::network::testing {

using namespace ct::sim::literals;

inline constexpr double kNoCap = std::numeric_limits<double>::infinity();  // send_pipelined: links only

// DGX-H100-like: 8 GPUs, NVLink 450 GB/s, PCIe Gen5 64 GB/s, 8 x 400 Gb/s NICs.
inline hardware::NodeSpec h100_node(int nics = 8) {
  hardware::NodeSpec n;
  n.gpu = hardware::gpu("H100-SXM");
  n.gpus_per_node = 8;
  n.nics_per_node = nics;
  n.nic_rate = sim::Bandwidth::gbps(400);
  n.nvlink_rate = sim::Bandwidth::bytes_per_s(450e9);
  n.nvlink_latency = sim::Duration::ns(700);
  n.pcie_rate = sim::Bandwidth::bytes_per_s(64e9);
  return n;
}

inline ClusterSpec small_cluster(int nodes, int nics = 8, int radix = 128, int tiers = 3,
                                 double oversubscription = 1.0) {
  ClusterSpec s;
  s.node = h100_node(nics);
  s.nodes = nodes;
  s.fabric.switch_radix = radix;
  s.fabric.tiers = tiers;
  s.fabric.oversubscription = oversubscription;
  return s;
}

// Records the delivery time of every tag.
class Recorder final : public DeliveryHandler {
 public:
  explicit Recorder(const sim::Simulation& sim) : sim_(sim) {}
  void on_delivered(uint64_t tag) override {
    if (times.size() <= tag) times.resize(tag + 1, -1.0);
    times[tag] = sim_.now().seconds();
    ++count;
  }
  std::vector<double> times;
  int count = 0;

 private:
  const sim::Simulation& sim_;
};

// Wire seconds of `bytes` at `bps` with the default 0.95 protocol efficiency.
inline double wire_s(double bytes, double bps) { return bytes * 8.0 / 0.95 / bps; }

}  // namespace ct::network::testing
