#include "models/network/cluster.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace ct::network {
namespace {

ClusterSpec normalised(ClusterSpec spec) {
  spec.node.validate();
  if (spec.nodes <= 0) {
    throw std::invalid_argument("cluster.nodes: got " + std::to_string(spec.nodes) +
                                ", expected a positive count");
  }
  spec.fabric.nodes = spec.nodes;
  spec.fabric.nics_per_node = spec.node.nics_per_node;
  spec.fabric.link_rate = spec.node.nic_rate;
  return spec;
}

}  // namespace

Cluster::Cluster(ClusterSpec spec)
    : spec_(normalised(std::move(spec))),
      topology_(topology::build_fabric(spec_.fabric)),
      link_dirs_(topology_.link_dir_count()) {}

void Cluster::throw_bad_gpu(int gpu, const char* what) const {
  throw std::out_of_range(std::string(what) + ": GPU rank " + std::to_string(gpu) + " is not in [0, " +
                          std::to_string(gpu_count()) + ")");
}

double Cluster::resource_capacity_bps(int32_t resource) const {
  if (resource < link_dirs_) return topology_.capacity(resource).bps();
  switch ((resource - link_dirs_) % 4) {
    case 0:
    case 1:
      return spec_.node.nvlink_rate.bps();
    default:
      return spec_.node.pcie_rate.bps();
  }
}

std::string Cluster::resource_name(int32_t resource) const {
  if (resource < link_dirs_) return topology_.name(resource);
  static constexpr const char* kPort[] = {"nvlink_tx", "nvlink_rx", "pcie_tx", "pcie_rx"};
  const int k = resource - link_dirs_;
  return "gpu" + std::to_string(k / 4) + "." + kPort[k % 4];
}

int Cluster::fabric_ports(int src_gpu, int dst_gpu) const {
  check_gpu(src_gpu, "network path source");
  check_gpu(dst_gpu, "network path destination");
  if (src_gpu == dst_gpu || domain_of(src_gpu) == domain_of(dst_gpu)) return 0;
  return static_cast<int>(topology_.out_links(nic_of(src_gpu)).size());
}

sim::Duration Cluster::path(int src_gpu, int dst_gpu, uint64_t flow_id, std::vector<int32_t>& out, int port,
                            bool* unique) const {
  check_gpu(src_gpu, "network path source");
  check_gpu(dst_gpu, "network path destination");
  out.clear();
  if (unique != nullptr) *unique = true;
  if (src_gpu == dst_gpu) return sim::Duration::zero();
  if (domain_of(src_gpu) == domain_of(dst_gpu)) {
    out.push_back(nvlink_tx(src_gpu));
    out.push_back(nvlink_rx(dst_gpu));
    return spec_.node.nvlink_latency;
  }
  // topology::Path is a vector of LinkDir (int32_t): route straight into `out`.
  topology_.route_into(nic_of(src_gpu), nic_of(dst_gpu), flow_id, out, port, unique);
  sim::Duration latency = sim::Duration::zero();
  for (const topology::LinkDir d : out) latency += topology_.latency(d);
  out.insert(out.begin(), pcie_tx(src_gpu));
  out.push_back(pcie_rx(dst_gpu));
  return latency;
}

bool rail_shares(const Cluster& cluster, const std::vector<bool>& simulated_rail,
                 std::vector<double>& share) {
  share.assign(static_cast<size_t>(cluster.resource_count()), 1.0);
  const topology::Topology& topo = cluster.topology();
  const int rails = cluster.nics_per_node();
  if (rails > 64 || static_cast<int>(simulated_rail.size()) != rails) return false;
  uint64_t simulated = 0;
  for (int r = 0; r < rails; ++r)
    if (simulated_rail[static_cast<size_t>(r)]) simulated |= uint64_t{1} << r;
  // Rails under each vertex, tier by tier from the NICs up.
  std::vector<uint64_t> under(static_cast<size_t>(topo.vertex_count()), 0);
  for (int v = 0; v < topo.nic_count(); ++v) under[static_cast<size_t>(v)] = uint64_t{1} << (v % rails);
  int top = 0;
  for (int v = topo.nic_count(); v < topo.vertex_count(); ++v) {
    if (topo.vertex(v).tier < 1) return false;  // no tiers to go by
    top = std::max(top, topo.vertex(v).tier);
  }
  for (int tier = 1; tier <= top; ++tier) {
    for (int v = topo.nic_count(); v < topo.vertex_count(); ++v) {
      if (topo.vertex(v).tier != tier) continue;
      for (const topology::LinkDir d : topo.out_links(v)) {
        const topology::VertexId u = topo.target(d);
        const int below = topo.is_switch(u) ? topo.vertex(u).tier : 0;
        if (below < tier) under[static_cast<size_t>(v)] |= under[static_cast<size_t>(u)];
      }
    }
  }
  for (topology::LinkDir d = 0; d < topo.link_dir_count(); ++d) {
    const topology::VertexId a = topo.source(d), b = topo.target(d);
    const int ta = topo.is_switch(a) ? topo.vertex(a).tier : 0;
    const int tb = topo.is_switch(b) ? topo.vertex(b).tier : 0;
    const uint64_t users = ta < tb   ? under[static_cast<size_t>(a)]
                           : tb < ta ? under[static_cast<size_t>(b)]
                                     : under[static_cast<size_t>(a)] | under[static_cast<size_t>(b)];
    const int total = std::popcount(users), kept = std::popcount(users & simulated);
    if (kept < total) share[static_cast<size_t>(d)] = static_cast<double>(kept) / total;
  }
  return true;
}

}  // namespace ct::network
