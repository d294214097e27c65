// Every fabric link direction of a cluster with its two ends and the load it carried: the
// columns of a link-utilization heatmap, handed to Python as numpy arrays.
//
// Row d is link direction d (== topology::LinkDir == network resource id, d < L). Ends are
// topology::Vertex (tier: 0 NIC, 1 leaf, 2 spine, 3 core; index: nic_id for a NIC, the
// switch's index within its tier and plane otherwise; plane). bytes and utilization are the
// backend's LinkStats at the time of the call (utilization = time-averaged load / capacity
// since time zero).
#pragma once

#include <cstdint>
#include <vector>

#include "models/network/cluster.h"
#include "models/network/network.h"

namespace ct::network {

struct FabricLinkTable {
  std::vector<int64_t> link, src_tier, src_index, dst_tier, dst_index, plane;
  std::vector<double> bytes, utilization;
  [[nodiscard]] size_t size() const { return link.size(); }
};

FabricLinkTable fabric_link_table(const Cluster& cluster, const Network& network);

}  // namespace ct::network
