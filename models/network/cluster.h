// A cluster: identical nodes (GPUs, NICs, NVLink, PCIe) joined by a generated fabric, and the
// resources a transfer crosses.
//
// GPUs are global ranks g = node * gpus_per_node + local. GPU g uses NIC
// rail = local * nics_per_node / gpus_per_node of its node (nic_id = node * nics_per_node + rail).
//
// Resources (one capacity each, per direction) are numbered densely so that every backend can
// keep per-resource arrays:
//   [0, L)                 fabric link directions: resource id == topology::LinkDir
//   L + 4g + 0 / 1         NVLink tx / rx port of GPU g (node.nvlink_rate; NVSwitch non-blocking)
//   L + 4g + 2 / 3         PCIe GPU->NIC / NIC->GPU of GPU g (node.pcie_rate)
// Paths: same NVLink domain (the node, or an NVL72 rack of nodes: node.nvlink_domain)
//                    = nvlink_tx(src), nvlink_rx(dst); latency node.nvlink_latency.
//        otherwise   = pcie_tx(src), fabric route NIC(src) -> NIC(dst), pcie_rx(dst);
//                      latency = sum of the fabric directions' latencies (PCIe adds none).
//        src == dst  = no resource, zero latency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/hardware/node.h"
#include "models/topology/fabric_config.h"
#include "models/topology/topology.h"
#include "sim/units.h"

namespace ct::network {

struct ClusterSpec {
  hardware::NodeSpec node;
  int nodes = 1;
  // fabric.nodes, fabric.nics_per_node and fabric.link_rate are overwritten from `nodes`,
  // node.nics_per_node and node.nic_rate, so the two descriptions cannot disagree.
  topology::FabricConfig fabric;
};

class Cluster {
 public:
  // Validates the node spec (std::invalid_argument) and builds the fabric.
  explicit Cluster(ClusterSpec spec);

  [[nodiscard]] const ClusterSpec& spec() const { return spec_; }
  [[nodiscard]] const hardware::NodeSpec& node() const { return spec_.node; }
  [[nodiscard]] int nodes() const { return spec_.nodes; }
  [[nodiscard]] int gpus_per_node() const { return spec_.node.gpus_per_node; }
  [[nodiscard]] int nics_per_node() const { return spec_.node.nics_per_node; }
  [[nodiscard]] int gpu_count() const { return spec_.nodes * spec_.node.gpus_per_node; }

  [[nodiscard]] int node_of(int gpu) const { return gpu / gpus_per_node(); }
  // NVLink domain of a GPU (the node unless node.nvlink_domain spans several, as NVL72 racks).
  [[nodiscard]] int nvlink_domain_gpus() const { return spec_.node.nvlink_domain_gpus(); }
  [[nodiscard]] int domain_of(int gpu) const { return gpu / nvlink_domain_gpus(); }
  [[nodiscard]] int nics_per_domain() const {
    return nics_per_node() * (nvlink_domain_gpus() / gpus_per_node());
  }
  [[nodiscard]] int local_of(int gpu) const { return gpu % gpus_per_node(); }
  [[nodiscard]] int rail_of(int gpu) const { return local_of(gpu) * nics_per_node() / gpus_per_node(); }
  [[nodiscard]] int nic_of(int gpu) const { return node_of(gpu) * nics_per_node() + rail_of(gpu); }
  // Throws std::out_of_range naming `what` and the rank when gpu is not in [0, gpu_count()).
  void check_gpu(int gpu, const char* what) const {
    if (gpu < 0 || gpu >= gpu_count()) [[unlikely]]
      throw_bad_gpu(gpu, what);
  }

  [[nodiscard]] const topology::Topology& topology() const { return topology_; }
  // For fault injection; tell the network backends about capacity changes
  // (Network::set_resource_capacity). Routes of new transfers follow the new tables.
  [[nodiscard]] topology::Topology& topology() { return topology_; }

  // Resources.
  [[nodiscard]] int resource_count() const { return link_dirs_ + 4 * gpu_count(); }
  [[nodiscard]] int link_dir_count() const { return link_dirs_; }
  [[nodiscard]] int32_t nvlink_tx(int gpu) const { return link_dirs_ + 4 * gpu; }
  [[nodiscard]] int32_t nvlink_rx(int gpu) const { return link_dirs_ + 4 * gpu + 1; }
  [[nodiscard]] int32_t pcie_tx(int gpu) const { return link_dirs_ + 4 * gpu + 2; }
  [[nodiscard]] int32_t pcie_rx(int gpu) const { return link_dirs_ + 4 * gpu + 3; }
  // Current capacity in bit/s (fabric directions: topology().capacity()).
  [[nodiscard]] double resource_capacity_bps(int32_t resource) const;
  // "leaf0->spine3.pod0", "gpu17.nvlink_tx", "gpu17.pcie_rx", ...
  [[nodiscard]] std::string resource_name(int32_t resource) const;

  // Appends the resources of the path src -> dst to `out` (cleared first) and returns its
  // latency. flow_id picks the ECMP path (same id, same path). Throws std::out_of_range for a
  // bad rank, topology::NoRouteError when the fabric has no usable path.
  // port >= 0: through the source NIC's port-th fabric port only (Topology::route_into).
  // `unique`, when given: whether the path is the same for every flow_id (no ECMP choice).
  sim::Duration path(int src_gpu, int dst_gpu, uint64_t flow_id, std::vector<int32_t>& out, int port = -1,
                     bool* unique = nullptr) const;
  // Fabric ports of the NIC a transfer src -> dst leaves by (several on a multi-plane or
  // dual-homed fabric); 0 when it stays inside the NVLink domain.
  [[nodiscard]] int fabric_ports(int src_gpu, int dst_gpu) const;

 private:
  [[noreturn]] void throw_bad_gpu(int gpu, const char* what) const;
  ClusterSpec spec_;
  topology::Topology topology_;
  int link_dirs_ = 0;
};

// Rail fold (replay::ProgramOptions::fold_rails): which rails use each resource, as the share
// of them that are simulated when only the GPUs on `simulated_rail` (one flag per rail of a
// node) run. A fabric link direction is usable by the rails of the NICs below its lower end (a
// NIC: its own rail; a switch: every rail under it, tier by tier), R of them, k of those
// simulated: share k / R (1: a link of simulated rails alone; 0: of unsimulated rails alone,
// which no simulated transfer crosses; in between: shared, where path_uses.h adds the
// siblings' routes). NVLink and PCIe ports belong to one GPU: 1. Returns false, every share 1,
// when a switch has no tier (none in any fabric built here) or a node has more than 64 rails.
bool rail_shares(const Cluster& cluster, const std::vector<bool>& simulated_rail, std::vector<double>& share);

}  // namespace ct::network
