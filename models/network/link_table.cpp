// Fabric link table (see link_table.h).
#include "models/network/link_table.h"

namespace ct::network {

FabricLinkTable fabric_link_table(const Cluster& cluster, const Network& network) {
  const topology::Topology& topo = cluster.topology();
  FabricLinkTable t;
  const auto n = static_cast<size_t>(cluster.link_dir_count());
  for (auto* column : {&t.link, &t.src_tier, &t.src_index, &t.dst_tier, &t.dst_index, &t.plane})
    column->reserve(n);
  t.bytes.reserve(n);
  t.utilization.reserve(n);
  for (topology::LinkDir d = 0; d < cluster.link_dir_count(); ++d) {
    const topology::Vertex& src = topo.vertex(topo.source(d));
    const topology::Vertex& dst = topo.vertex(topo.target(d));
    const LinkStats s = network.link_stats(d);
    t.link.push_back(d);
    t.src_tier.push_back(src.tier);
    t.src_index.push_back(src.index);
    t.dst_tier.push_back(dst.tier);
    t.dst_index.push_back(dst.index);
    t.plane.push_back(src.kind == topology::VertexKind::nic ? dst.plane : src.plane);
    t.bytes.push_back(s.bytes);
    t.utilization.push_back(s.utilization);
  }
  return t;
}

}  // namespace ct::network
