// Generators of rail-optimized Clos, fat-tree and multi-plane fabrics (dimensions and limits:
// clos_shape.cpp).
//
// NIC placement, with down = NIC ports per leaf:
//   rail_optimized: rail group g = node / down; NIC (node, rail r) -> leaf g * R + r, so every
//                   NIC of rail r in a rail group shares one leaf.
//   fat_tree:       NIC id i -> leaf i / down (consecutive, no rail alignment).
//   multi_plane:    P identical rail-optimized planes; every NIC has P ports, port p cabled to
//                   plane p. Each port runs at link_rate / P so a NIC's total stays link_rate.
// 2 tiers: leaf l's uplink j -> spine (l * up + j) mod spines (even spread; parallel cables
//          when up > spines).
// 3 tiers: leaf l is in pod l / (radix/2); its uplink j -> spine j of its pod; uplink j of
//          spine s in pod q -> core (q * spine_up + j) mod cores_per_group of core group s.
// Names: "leaf<l>", "spine<s>" (2 tiers) or "spine<s>.pod<q>", "core<c>" with
// c = s * cores_per_group + i; ".plane<p>" is appended when P > 1.
#include <string>
#include <vector>

#include "models/topology/builder.h"
#include "models/topology/clos_shape.h"

namespace ct::topology::detail {

Topology build_clos(const FabricConfig& c) {
  const ClosShape s = clos_shape(c);
  const int rails = c.nics_per_node;
  const int nics = c.nodes * rails;
  const sim::Bandwidth rate = c.link_rate * (1.0 / s.planes);
  const sim::Duration lat = c.link_latency;
  const sim::Duration sw_lat = c.switch_latency;

  TopologyBuilder b(c.nodes, rails, s.planes);
  size_t cables = static_cast<size_t>(nics) + static_cast<size_t>(s.leaves) * s.up;
  if (s.tiers == 3) cables += static_cast<size_t>(s.pods) * s.spines * s.spine_up;
  b.reserve_links(cables * static_cast<size_t>(s.planes));

  std::vector<VertexId> leaf(static_cast<size_t>(s.leaves));
  std::vector<VertexId> spine;
  std::vector<VertexId> core;
  for (int p = 0; p < s.planes; ++p) {
    const std::string plane = s.planes > 1 ? ".plane" + std::to_string(p) : "";
    for (int l = 0; l < s.leaves; ++l) {
      leaf[l] = b.add_switch("leaf" + std::to_string(l) + plane, 1, p,
                             s.tiers == 3 ? l / s.leaves_per_pod : -1, l, sw_lat);
    }
    for (int n = 0; n < c.nodes; ++n) {
      for (int r = 0; r < rails; ++r) {
        const int nic = n * rails + r;
        const int l = s.rail_aligned ? (n / s.down) * rails + r : nic / s.down;
        b.add_link(nic, leaf[l], rate, lat);
      }
    }
    if (s.tiers == 2) {
      spine.resize(static_cast<size_t>(s.spines));
      for (int k = 0; k < s.spines; ++k) {
        spine[k] = b.add_switch("spine" + std::to_string(k) + plane, 2, p, -1, k, sw_lat);
      }
      for (int l = 0; l < s.leaves; ++l) {
        for (int j = 0; j < s.up; ++j) {
          b.add_link(leaf[l], spine[(l * s.up + j) % s.spines], rate, lat);
        }
      }
      continue;
    }
    spine.resize(static_cast<size_t>(s.pods) * s.spines);
    for (int q = 0; q < s.pods; ++q) {
      for (int k = 0; k < s.spines; ++k) {
        spine[q * s.spines + k] =
            b.add_switch("spine" + std::to_string(k) + ".pod" + std::to_string(q) + plane, 2, p, q,
                         q * s.spines + k, sw_lat);
      }
    }
    for (int l = 0; l < s.leaves; ++l) {
      const int q = l / s.leaves_per_pod;
      for (int j = 0; j < s.up; ++j) b.add_link(leaf[l], spine[q * s.spines + j], rate, lat);
    }
    const int cpg = s.cores_per_group;
    core.resize(static_cast<size_t>(s.spines) * cpg);
    for (int i = 0; i < s.spines * cpg; ++i) {
      core[i] = b.add_switch("core" + std::to_string(i) + plane, 3, p, -1, i, sw_lat);
    }
    for (int q = 0; q < s.pods; ++q) {
      for (int k = 0; k < s.spines; ++k) {
        for (int j = 0; j < s.spine_up; ++j) {
          b.add_link(spine[q * s.spines + k], core[k * cpg + (q * s.spine_up + j) % cpg], rate, lat);
        }
      }
    }
  }
  return b.finish();
}

}  // namespace ct::topology::detail
