// The fabric link table (link_table.h): one row per link direction with its ends, and the load
// of one transfer exactly on its route's directions.
#include <gtest/gtest.h>

#include <set>

#include "models/network/cluster.h"
#include "models/network/link_table.h"
#include "models/network/network.h"
#include "models/network/tests/fixtures.h"

namespace ct::network {
namespace {

using testing::Recorder;
using testing::small_cluster;

TEST(FabricLinkTable, OneRowPerDirectionAndTheRouteCarriesTheBytes) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  auto net = make_network("flow", sim, c);
  Recorder rec(sim);
  const int64_t bytes = 64 << 20;
  net->send(2, 8 + 2, sim::Bytes{bytes}, rec, 0);  // GPU 2 of node 0 -> GPU 2 of node 1: rail 2
  sim.run();
  const FabricLinkTable t = fabric_link_table(c, *net);
  ASSERT_EQ(t.size(), static_cast<size_t>(c.link_dir_count()));
  const topology::Topology& topo = c.topology();
  const topology::Path path = topo.route(c.nic_of(2), c.nic_of(10), 0);
  ASSERT_FALSE(path.empty());
  const std::set<topology::LinkDir> route(path.begin(), path.end());
  // The route leaves NIC 2 (node 0, rail 2) and arrives at NIC 10 (node 1, rail 2).
  const auto first = static_cast<size_t>(path.front()), last = static_cast<size_t>(path.back());
  EXPECT_EQ(t.src_tier[first], 0);
  EXPECT_EQ(t.src_index[first], 2);
  EXPECT_EQ(t.dst_tier[last], 0);
  EXPECT_EQ(t.dst_index[last], 10);
  for (size_t d = 0; d < t.size(); ++d) {
    EXPECT_EQ(t.link[d], static_cast<int64_t>(d));
    EXPECT_EQ(std::abs(t.src_tier[d] - t.dst_tier[d]), 1);  // cables join adjacent tiers
    const auto dir = static_cast<topology::LinkDir>(d);
    EXPECT_EQ(t.src_index[d], topo.vertex(topo.source(dir)).index);
    if (route.count(dir) != 0) {
      EXPECT_GE(t.bytes[d], static_cast<double>(bytes));  // wire bytes include headers
      EXPECT_GT(t.utilization[d], 0.0);
    } else {
      EXPECT_EQ(t.bytes[d], 0.0) << topo.name(dir);
    }
  }
}

}  // namespace
}  // namespace ct::network
