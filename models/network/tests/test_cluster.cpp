#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/network/cluster.h"
#include "models/network/path_uses.h"
#include "models/network/tests/fixtures.h"

namespace ct::network {
namespace {

using testing::small_cluster;

TEST(Cluster, RankToNicMapping) {
  const Cluster c(small_cluster(4, 4));
  EXPECT_EQ(c.gpu_count(), 32);
  EXPECT_EQ(c.node_of(13), 1);
  EXPECT_EQ(c.local_of(13), 5);
  EXPECT_EQ(c.rail_of(13), 2);  // local 5 * 4 NICs / 8 GPUs
  EXPECT_EQ(c.nic_of(13), 1 * 4 + 2);
  EXPECT_EQ(c.topology().nic_count(), 16);
}

TEST(Cluster, FabricTakesNodeCountsAndNicRate) {
  auto spec = small_cluster(3);
  spec.fabric.nodes = 999;
  spec.fabric.link_rate = sim::Bandwidth::gbps(1);
  const Cluster c(spec);
  EXPECT_EQ(c.topology().nodes(), 3);
  EXPECT_DOUBLE_EQ(c.topology().capacity(0).bps(), 400e9);
}

TEST(Cluster, IntraNodePathIsNvlinkPorts) {
  const Cluster c(small_cluster(2));
  std::vector<int32_t> p;
  const auto lat = c.path(1, 6, 0, p);
  ASSERT_EQ(p.size(), 2U);
  EXPECT_EQ(p[0], c.nvlink_tx(1));
  EXPECT_EQ(p[1], c.nvlink_rx(6));
  EXPECT_EQ(lat, c.node().nvlink_latency);
  EXPECT_EQ(c.resource_name(c.nvlink_tx(1)), "gpu1.nvlink_tx");
  EXPECT_DOUBLE_EQ(c.resource_capacity_bps(c.nvlink_rx(6)), 450e9 * 8);
}

TEST(Cluster, InterNodePathIsPcieFabricPcie) {
  const Cluster c(small_cluster(2));
  std::vector<int32_t> p;
  const auto lat = c.path(3, 8 + 3, 7, p);
  const auto route = c.topology().route(c.nic_of(3), c.nic_of(11), 7);
  ASSERT_EQ(p.size(), route.size() + 2);
  EXPECT_EQ(p.front(), c.pcie_tx(3));
  EXPECT_EQ(p.back(), c.pcie_rx(11));
  sim::Duration expected = sim::Duration::zero();
  for (size_t i = 0; i < route.size(); ++i) {
    EXPECT_EQ(p[i + 1], route[i]);
    expected += c.topology().latency(route[i]);
  }
  EXPECT_EQ(lat, expected);
  EXPECT_EQ(c.resource_name(c.pcie_rx(11)), "gpu11.pcie_rx");
}

// An NVLink domain of several nodes (NVL72-style): GPUs of different nodes in the same domain
// talk over their NVLink ports, GPUs of different domains over PCIe and the fabric.
TEST(Cluster, NvlinkDomainSpansNodes) {
  auto spec = small_cluster(4);
  spec.node.nvlink_domain = 16;  // two nodes of 8
  const Cluster c(spec);
  EXPECT_EQ(c.domain_of(15), 0);
  EXPECT_EQ(c.domain_of(16), 1);
  EXPECT_EQ(c.nics_per_domain(), 2 * c.nics_per_node());
  std::vector<int32_t> p;
  EXPECT_EQ(c.path(3, 8 + 3, 7, p), c.node().nvlink_latency);
  ASSERT_EQ(p.size(), 2U);
  EXPECT_EQ(p[0], c.nvlink_tx(3));
  EXPECT_EQ(p[1], c.nvlink_rx(11));
  (void)c.path(3, 16 + 3, 7, p);
  EXPECT_EQ(p.front(), c.pcie_tx(3));
  EXPECT_EQ(p.back(), c.pcie_rx(19));
}

TEST(Cluster, PathsWithoutAChoiceAreRememberedOthersRoutedPerFlow) {
  // 64 nodes on a two-tier radix-32 fabric: rails of 16 nodes per leaf, so node 0 -> node 1 on
  // rail 0 has one path (NIC, leaf, NIC) and node 0 -> node 63 crosses a spine (ECMP).
  const Cluster c(small_cluster(64, 8, 32, 2));
  std::vector<int32_t> a, b;
  bool unique = false;
  (void)c.path(0, 8, 1, a, -1, &unique);
  EXPECT_TRUE(unique) << "same leaf";
  (void)c.path(0, 1, 1, a, -1, &unique);
  EXPECT_TRUE(unique) << "inside the node";
  (void)c.path(0, 63 * 8, 1, a, -1, &unique);
  EXPECT_FALSE(unique) << "across spines";
  // PathUses remembers the unique path and still routes the ECMP pair per flow id: the uses
  // equal a fresh route's for every flow id.
  PathUses uses(c);
  for (const int dst : {8, 63 * 8}) {
    for (uint64_t flow = 0; flow < 64; ++flow) {
      const sim::Duration lat = c.path(0, dst, flow, a);
      uses.clear();
      EXPECT_EQ(uses.add(0, dst, flow), lat);
      b.clear();
      for (const PathUses::Use& u : uses.uses()) b.push_back(u.resource);
      EXPECT_EQ(a, b) << "dst " << dst << " flow " << flow;
    }
  }
  // Two different flows do take two different spines across the fabric.
  std::vector<int32_t> first;
  (void)c.path(0, 63 * 8, 0, first);
  bool differs = false;
  for (uint64_t flow = 1; flow < 64 && !differs; ++flow) {
    (void)c.path(0, 63 * 8, flow, a);
    differs = a != first;
  }
  EXPECT_TRUE(differs);
  // A routing change drops what was remembered: with NIC 0's cable down, 0 -> 8 has no path.
  Cluster mutable_cluster(small_cluster(64, 8, 32, 2));
  PathUses fresh(mutable_cluster);
  (void)fresh.add(0, 8, 0);
  const topology::Path route =
      mutable_cluster.topology().route(mutable_cluster.nic_of(0), mutable_cluster.nic_of(8), 0);
  mutable_cluster.topology().set_link_state(route.front(), topology::LinkState::down);
  fresh.clear();
  EXPECT_THROW((void)fresh.add(0, 8, 0), topology::NoRouteError);
}

TEST(Cluster, BadRankIsAnError) {
  const Cluster c(small_cluster(2));
  std::vector<int32_t> p;
  try {
    c.path(0, 16, 0, p);
    FAIL();
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("16"), std::string::npos);
  }
}

TEST(MakeNetwork, ModesAndErrors) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  EXPECT_NE(make_network("analytical", sim, c), nullptr);
  EXPECT_NE(make_network("flow", sim, c), nullptr);
  EXPECT_NE(make_network("packet", sim, c), nullptr);
  for (const char* bad : {"fluid", ""}) {
    try {
      make_network(bad, sim, c);
      FAIL() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("network.mode"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(make_network("flow", sim, c, NetworkParams{0.0}), std::invalid_argument);
}

// network.qps_per_connection: a leg across the spines is carried by q queue pairs, each hashed
// onto its own path with 1/q of the leg; QP 0 keeps the connection's path, so q = 1 is one QP.
// The NIC's ports carry the whole leg whatever q; the spine uplinks split it (16 QPs over the
// 16 spines of a radix-32 two-tier fabric: no uplink carries more than a few sixteenths). A
// pair with one path (same leaf) is the same for any q.
TEST(Cluster, QueuePairsSpreadAConnectionOverItsEcmpPaths) {
  const Cluster c(small_cluster(64, 8, 32, 2));
  PathUses one(c), many(c);
  many.set_queue_pairs(16);
  EXPECT_EQ(many.queue_pairs(), 16);
  EXPECT_THROW(many.set_queue_pairs(0), std::invalid_argument);
  std::vector<int32_t> single;
  (void)c.path(0, 63 * 8, 7, single);
  (void)one.add(0, 63 * 8, 7);
  std::vector<int32_t> b;
  for (const PathUses::Use& u : one.uses()) {
    b.push_back(u.resource);
    EXPECT_EQ(u.coefficient, 1.0);
  }
  EXPECT_EQ(b, single);
  (void)many.add(0, 63 * 8, 7);
  double total = 0.0, largest = 0.0;
  size_t partial = 0;
  for (const PathUses::Use& u : many.uses()) {
    EXPECT_LE(u.coefficient, 1.0 + 1e-12);
    if (u.coefficient < 1.0 - 1e-12) {
      ++partial;
      largest = std::max(largest, u.coefficient);
    }
    total += u.coefficient;
  }
  EXPECT_GT(many.uses().size(), single.size() + 8);  // many uplinks, not one path
  EXPECT_GT(partial, 8u);
  EXPECT_LE(largest, 5.0 / 16);
  // The endpoints (PCIe, NIC ports, the two leaves' ports) carry the whole leg.
  for (const int32_t r : {single.front(), single[1], single[single.size() - 2], single.back()}) {
    const auto it = std::find_if(many.uses().begin(), many.uses().end(),
                                 [&](const PathUses::Use& u) { return u.resource == r; });
    ASSERT_NE(it, many.uses().end());
    EXPECT_NEAR(it->coefficient, 1.0, 1e-12);
  }
  EXPECT_NEAR(total, static_cast<double>(single.size()), 1e-9);  // every path as long
  // Same leaf: one path, the same uses for any q.
  one.clear();
  many.clear();
  (void)one.add(0, 8, 7);
  (void)many.add(0, 8, 7);
  ASSERT_EQ(one.uses().size(), many.uses().size());
  for (size_t i = 0; i < one.uses().size(); ++i) {
    EXPECT_EQ(one.uses()[i].resource, many.uses()[i].resource);
    EXPECT_DOUBLE_EQ(one.uses()[i].coefficient, many.uses()[i].coefficient);
  }
}

}  // namespace
}  // namespace ct::network
