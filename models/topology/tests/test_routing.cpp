#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/topology/tests/fixtures.h"

namespace ct::topology {
namespace {

using testing::expect_valid_path;
using testing::nic;

class Routing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { topo_ = new Topology(build_fabric(testing::default_cluster())); }
  static void TearDownTestSuite() {
    delete topo_;
    topo_ = nullptr;
  }
  static Topology* topo_;
};
Topology* Routing::topo_ = nullptr;

TEST_F(Routing, ShortestLengths) {
  const Topology& t = *topo_;
  struct Case {
    int src, dst;
    size_t hops;
  };
  const Case cases[] = {
      {nic(t, 0, 0), nic(t, 63, 0), 2},    // same leaf (rail group 0, rail 0)
      {nic(t, 0, 0), nic(t, 0, 1), 4},     // same node, other rail: same pod
      {nic(t, 0, 3), nic(t, 500, 3), 4},   // rail groups 0 and 7: pod 0
      {nic(t, 0, 0), nic(t, 1279, 0), 6},  // pod 0 -> pod 2
      {nic(t, 700, 5), nic(t, 10, 2), 6},  // pod 1 -> pod 0
  };
  for (const Case& c : cases) {
    for (uint64_t flow = 0; flow < 50; ++flow) {
      const Path p = t.route(c.src, c.dst, flow);
      expect_valid_path(t, p, c.src, c.dst);
      EXPECT_EQ(p.size(), c.hops) << c.src << " -> " << c.dst;
    }
    EXPECT_EQ(t.hop_count(c.src, c.dst), static_cast<int>(c.hops));
  }
  EXPECT_TRUE(t.route(5, 5, 1).empty());
}

TEST_F(Routing, SwitchesOnPathsAreEveryEcmpChoice) {
  const Topology& t = *topo_;
  struct Case {
    int src, dst;
  };
  const Case cases[] = {
      {nic(t, 0, 0), nic(t, 63, 0)}, {nic(t, 0, 3), nic(t, 500, 3)}, {nic(t, 0, 0), nic(t, 1279, 0)}};
  for (const Case& c : cases) {
    std::set<VertexId> sampled;
    for (uint64_t flow = 0; flow < 6400; ++flow) {
      for (const LinkDir d : t.route(c.src, c.dst, flow))
        if (t.is_switch(t.target(d))) sampled.insert(t.target(d));
    }
    const std::vector<VertexId> all = t.switches_on_paths(c.src, c.dst);
    EXPECT_EQ(std::set<VertexId>(all.begin(), all.end()), sampled) << c.src << " -> " << c.dst;
    EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  }
  EXPECT_EQ(t.switches_on_paths(nic(t, 0, 0), nic(t, 63, 0)).size(), 1U);  // their shared leaf
  EXPECT_TRUE(t.switches_on_paths(7, 7).empty());
}

TEST_F(Routing, EcmpSpreadsOverSpinesAndCores) {
  const Topology& t = *topo_;
  const int src = nic(t, 0, 0);
  const int dst = nic(t, 1279, 0);
  std::map<VertexId, int> spines;
  std::map<VertexId, int> cores;
  std::set<VertexId> dst_spines;
  constexpr int kFlows = 6400;
  for (uint64_t flow = 0; flow < kFlows; ++flow) {
    const Path p = t.route(src, dst, flow);
    ++spines[t.target(p[1])];
    ++cores[t.target(p[2])];
    dst_spines.insert(t.target(p[3]));
  }
  ASSERT_EQ(spines.size(), 64u);  // every spine of pod 0
  EXPECT_EQ(cores.size(), 128u);  // both cores of every group
  EXPECT_EQ(dst_spines.size(), 64u);
  for (const auto& [spine, n] : spines) {
    EXPECT_EQ(t.vertex(spine).pod, 0);
    EXPECT_GT(n, 100 / 2) << t.vertex(spine).name;  // mean 100
    EXPECT_LT(n, 100 * 2) << t.vertex(spine).name;
  }
}

TEST_F(Routing, Deterministic) {
  const Topology& t = *topo_;
  const Topology copy = t;
  int differ = 0;
  for (uint64_t flow = 0; flow < 100; ++flow) {
    const Path a = t.route(3, 9000, flow);
    EXPECT_EQ(a, t.route(3, 9000, flow));
    EXPECT_EQ(a, copy.route(3, 9000, flow));
    differ += a != t.route(3, 9000, flow + 1000) ? 1 : 0;
  }
  EXPECT_GT(differ, 90);
  // Fixed hash: this path must not change across platforms, runs or builds.
  const Path p = t.route(0, 10239, 42);
  std::vector<std::string> names;
  for (LinkDir d : p) names.push_back(t.name(d));
  EXPECT_EQ(names, (std::vector<std::string>{"node0.nic0->leaf0", "leaf0->spine35.pod0",
                                             "spine35.pod0->core71", "core71->spine35.pod2",
                                             "spine35.pod2->leaf159", "leaf159->node1279.nic7"}));
  Path again;
  t.route_into(0, 10239, 42, again);
  EXPECT_EQ(p, again);
}

TEST_F(Routing, BadNicIds) {
  EXPECT_THROW((void)topo_->route(-1, 0, 0), std::out_of_range);
  EXPECT_THROW((void)topo_->route(0, 10240, 0), std::out_of_range);
}

TEST(RoutingSmall, TwoTierAndFatTree) {
  for (const char* kind : {"rail_optimized", "fat_tree"}) {
    const Topology t = build_fabric(testing::small(kind, 2, 16, 20, 4));
    for (int s = 0; s < t.nic_count(); ++s) {
      for (int d = 0; d < t.nic_count(); ++d) {
        if (s == d) continue;
        const Path p = t.route(s, d, static_cast<uint64_t>(s * 131 + d));
        expect_valid_path(t, p, s, d);
        EXPECT_EQ(p.size(), t.leaf_of(s) == t.leaf_of(d) ? 2u : 4u);
      }
    }
  }
}

TEST(RoutingSmall, MultiPlaneUsesBothPlanes) {
  FabricConfig c = testing::small("multi_plane", 2, 16, 16, 2);
  c.planes = 2;
  const Topology t = build_fabric(c);
  std::set<int> planes;
  for (uint64_t flow = 0; flow < 64; ++flow) {
    const Path p = t.route(0, 31, flow);
    expect_valid_path(t, p, 0, 31);
    planes.insert(t.vertex(t.target(p[0])).plane);
  }
  EXPECT_EQ(planes.size(), 2u);
}

// The most flows any link direction carries when every NIC i sends to NIC (i + shift) mod n.
int max_link_load(const Topology& t, int shift, uint64_t flow) {
  std::map<LinkDir, int> load;
  int most = 0;
  const int n = t.nic_count();
  for (int s = 0; s < n; ++s) {
    const int d = (s + shift) % n;
    const Path p = t.route(s, d, flow + static_cast<uint64_t>(s));
    expect_valid_path(t, p, s, d);
    for (LinkDir l : p) most = std::max(most, ++load[l]);
  }
  return most;
}

// D-mod-K (Zahavi 2010): on a full fat tree a shift permutation shares no link; ECMP's hash
// makes some flows of the same permutation collide on an uplink.
TEST(RoutingSmall, DmodkShiftPermutationsShareNoLink) {
  struct Shape {
    const char* kind;
    int tiers, radix, nodes, nics;
  };
  for (const Shape& sh : {Shape{"fat_tree", 3, 8, 32, 4}, Shape{"fat_tree", 2, 16, 16, 8},
                          Shape{"rail_optimized", 3, 8, 32, 4}, Shape{"fat_tree", 3, 16, 128, 8}}) {
    FabricConfig c = testing::small(sh.kind, sh.tiers, sh.radix, sh.nodes, sh.nics);
    const Topology ecmp = build_fabric(c);
    c.routing = "dmodk";
    const Topology dmodk = build_fabric(c);
    EXPECT_EQ(dmodk.routing(), ct::topology::Routing::dmodk);
    int ecmp_worst = 0;
    for (const int shift : {1, sh.nics, 2 * sh.nics + 1, dmodk.nic_count() / 2}) {
      SCOPED_TRACE(std::string(sh.kind) + " radix " + std::to_string(sh.radix) + " shift " +
                   std::to_string(shift));
      EXPECT_EQ(max_link_load(dmodk, shift, 0), 1);
      ecmp_worst = std::max(ecmp_worst, max_link_load(ecmp, shift, 0));
    }
    EXPECT_GT(ecmp_worst, 1) << sh.kind;
  }
}

TEST(RoutingSmall, DmodkPathsDependOnTheDestinationOnly) {
  FabricConfig c = testing::small("fat_tree", 3, 8, 32, 4);
  c.routing = "dmodk";
  const Topology t = build_fabric(c);
  for (int d : {5, 77, 127}) {
    bool unique = false;
    Path first;
    t.route_into(0, d, 1, first, -1, &unique);
    EXPECT_TRUE(unique);
    for (uint64_t flow = 2; flow < 40; ++flow) EXPECT_EQ(t.route(0, d, flow), first);
  }
  c.routing = "ospf";
  EXPECT_THROW(
      {
        try {
          (void)build_fabric(c);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("cluster.fabric.routing"), std::string::npos);
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_THROW(check_fabric(c), std::invalid_argument);
}

}  // namespace
}  // namespace ct::topology
