#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
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

// Rail fold: on a 3-tier rail-optimized fabric of 16-port switches, a rail's NIC and leaf
// links belong to it alone, the spine-core links to every rail; folding onto rail 0 leaves a
// core link 1 / 8 to the simulated rail and another rail's leaf 0.
TEST(Cluster, RailSharesFollowTheRailsBelowEachLink) {
  const Cluster c(small_cluster(32, 8, 16, 3));
  const auto& topo = c.topology();
  std::vector<bool> rail0(8, false);
  rail0[0] = true;
  std::vector<double> share;
  ASSERT_TRUE(rail_shares(c, rail0, share));
  ASSERT_EQ(share.size(), static_cast<size_t>(c.resource_count()));
  int shared = 0, other = 0, own = 0;
  for (topology::LinkDir d = 0; d < topo.link_dir_count(); ++d) {
    const int low = std::min(topo.is_switch(topo.source(d)) ? topo.vertex(topo.source(d)).tier : 0,
                             topo.is_switch(topo.target(d)) ? topo.vertex(topo.target(d)).tier : 0);
    const double s = share[static_cast<size_t>(d)];
    if (low >= 2) {  // spine <-> core: every rail of the pod's leaves under the spine
      EXPECT_DOUBLE_EQ(s, 1.0 / 8) << c.resource_name(d);
      ++shared;
    } else {  // NIC <-> leaf, leaf <-> spine: one rail's
      EXPECT_TRUE(s == 0.0 || s == 1.0) << c.resource_name(d);
      (s == 1.0 ? own : other) += 1;
    }
  }
  EXPECT_GT(shared, 0);
  EXPECT_EQ(other, 7 * own);  // the other seven rails' links, as many each as rail 0's
  EXPECT_DOUBLE_EQ(share[static_cast<size_t>(c.nvlink_tx(3))], 1.0);
  // Every rail simulated: nothing is shared out.
  std::vector<bool> all(8, true);
  ASSERT_TRUE(rail_shares(c, all, share));
  for (const double s : share) EXPECT_DOUBLE_EQ(s, 1.0);
  // A fat tree's leaves take every rail of their nodes: their uplinks are shared.
  auto ft = small_cluster(32, 8, 64, 2, 2.0);
  ft.fabric.topology = "fat_tree";
  const Cluster f(ft);
  ASSERT_TRUE(rail_shares(f, rail0, share));
  int leaf_up = 0;
  for (topology::LinkDir d = 0; d < f.topology().link_dir_count(); ++d) {
    const auto& t = f.topology();
    if (t.is_switch(t.source(d)) && t.is_switch(t.target(d))) {
      EXPECT_DOUBLE_EQ(share[static_cast<size_t>(d)], 1.0 / 8) << f.resource_name(d);
      ++leaf_up;
    }
  }
  EXPECT_GT(leaf_up, 0);
}

// A leg between two rail-0 GPUs under rail folding adds its siblings' routes on shared links
// only: GPU k of node A to GPU k of node B, k = 1..7, each with coefficient 1 where it crosses
// a shared link, and nothing on their own NICs and leaves.
TEST(PathUses, RailFoldAddsSiblingsOnSharedLinksOnly) {
  const Cluster c(small_cluster(32, 8, 16, 3));
  std::vector<bool> rail0(8, false);
  rail0[0] = true;
  std::vector<double> share;
  ASSERT_TRUE(rail_shares(c, rail0, share));
  auto flags = std::make_shared<std::vector<uint8_t>>(share.size(), 0);
  for (size_t k = 0; k < share.size(); ++k) (*flags)[k] = share[k] > 0 && share[k] < 1;
  const int src = 0, dst = 31 * 8;  // node 0 and node 31: different pods, over the cores
  PathUses alone(c), folded(c), siblings(c);
  alone.add(src, dst, 7);
  folded.set_rail_fold(8, flags);
  folded.add(src, dst, 7);
  for (int k = 0; k < 8; ++k) siblings.add(src + k, dst + k, 7);
  double core_alone = 0, core_folded = 0, core_all = 0;
  for (const auto& u : alone.uses()) core_alone += (*flags)[u.resource] ? u.coefficient : 0;
  for (const auto& u : folded.uses()) {
    EXPECT_TRUE(share[static_cast<size_t>(u.resource)] > 0) << c.resource_name(u.resource);
    core_folded += (*flags)[u.resource] ? u.coefficient : 0;
  }
  for (const auto& u : siblings.uses()) core_all += (*flags)[u.resource] ? u.coefficient : 0;
  EXPECT_GT(core_alone, 0);
  EXPECT_DOUBLE_EQ(core_folded, core_all);        // every sibling's shared hops
  EXPECT_DOUBLE_EQ(core_folded, 8 * core_alone);  // eight legs of equal length
  // On each shared resource the folded leg's coefficient is the count of sibling routes there.
  for (const auto& u : folded.uses()) {
    if (!(*flags)[u.resource]) {
      EXPECT_DOUBLE_EQ(u.coefficient, 1.0) << c.resource_name(u.resource);
      continue;
    }
    double n = 0;
    for (const auto& v : siblings.uses()) n += v.resource == u.resource ? v.coefficient : 0;
    EXPECT_DOUBLE_EQ(u.coefficient, n) << c.resource_name(u.resource);
  }
  EXPECT_EQ(folded.max_latency(), alone.max_latency());
}

}  // namespace
}  // namespace ct::network
