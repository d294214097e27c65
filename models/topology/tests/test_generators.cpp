#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "models/topology/tests/fixtures.h"

namespace ct::topology {
namespace {

using testing::default_cluster;
using testing::small;

std::string error_of(const FabricConfig& c) {
  try {
    (void)build_fabric(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

int degree_to(const Topology& t, VertexId v, VertexKind kind) {
  int n = 0;
  for (LinkDir d : t.out_links(v)) n += t.vertex(t.target(d)).kind == kind ? 1 : 0;
  return n;
}

TEST(Generators, DefaultClusterSizes) {
  const Topology t = build_fabric(default_cluster());
  EXPECT_EQ(t.nic_count(), 10240);
  EXPECT_EQ(t.switch_count(1), 160);  // 20 rail groups x 8 rails
  EXPECT_EQ(t.switch_count(2), 192);  // 3 pods x 64 spines
  EXPECT_EQ(t.switch_count(3), 128);  // 64 core groups x 2
  EXPECT_EQ(t.vertex_count(), 10240 + 160 + 192 + 128);
  EXPECT_EQ(t.link_count(), 10240 + 160 * 64 + 192 * 64);
  EXPECT_EQ(t.link_dir_count(), 2 * t.link_count());
  for (int n = 0; n < t.nic_count(); ++n) {
    ASSERT_EQ(t.out_links(n).size(), 1u) << n;
    EXPECT_EQ(t.vertex(t.leaf_of(n)).tier, 1);
  }
  for (VertexId v = t.nic_count(); v < t.vertex_count(); ++v) {
    EXPECT_LE(t.out_links(v).size(), 128u) << t.vertex(v).name;
  }
  EXPECT_EQ(t.vertex(0).name, "node0.nic0");
  EXPECT_TRUE(t.find_vertex("spine63.pod2").has_value());
  EXPECT_TRUE(t.find_vertex("core127").has_value());
  EXPECT_EQ(t.capacity(0), sim::Bandwidth::gbps(400));
}

TEST(Generators, TwoTierFullSize) {
  const Topology t = build_fabric(small("rail_optimized", 2, 128, 1024, 8));
  EXPECT_EQ(t.switch_count(1), 128);
  EXPECT_EQ(t.switch_count(2), 64);
  EXPECT_EQ(t.switch_count(3), 0);
  EXPECT_EQ(t.link_count(), 8192 + 128 * 64);
  // Every leaf reaches every spine exactly once.
  for (VertexId v = t.nic_count(); v < t.vertex_count(); ++v) {
    if (t.vertex(v).tier != 2) continue;
    std::set<VertexId> leaves;
    for (LinkDir d : t.out_links(v)) leaves.insert(t.target(d));
    EXPECT_EQ(leaves.size(), 128u);
  }
}

TEST(Generators, RailAlignment) {
  const Topology t = build_fabric(default_cluster());
  for (int group = 0; group < 20; ++group) {
    for (int r = 0; r < 8; ++r) {
      const VertexId leaf = t.leaf_of(testing::nic(t, group * 64, r));
      for (int n = group * 64; n < group * 64 + 64; ++n) {
        ASSERT_EQ(t.leaf_of(testing::nic(t, n, r)), leaf);
      }
      if (r > 0) {
        EXPECT_NE(leaf, t.leaf_of(testing::nic(t, group * 64, 0)));
      }
    }
  }
}

TEST(Generators, FatTreeIsConsecutive) {
  const Topology t = build_fabric(small("fat_tree", 3, 128, 1280, 8));
  EXPECT_EQ(t.switch_count(1), 160);
  for (int n = 0; n < t.nic_count(); ++n) {
    ASSERT_EQ(t.vertex(t.leaf_of(n)).index, n / 64);
  }
  EXPECT_EQ(t.leaf_of(0), t.leaf_of(7));  // all NICs of node 0 on one leaf
}

TEST(Generators, TwoTierLimit) {
  EXPECT_NO_THROW((void)build_fabric(small("rail_optimized", 2, 128, 8192, 1)));
  const std::string e = error_of(small("rail_optimized", 2, 128, 8193, 1));
  EXPECT_NE(e.find("cluster.fabric.tiers"), std::string::npos) << e;
  EXPECT_NE(e.find("8193"), std::string::npos) << e;
  EXPECT_NE(e.find("8192"), std::string::npos) << e;
  EXPECT_NE(error_of(small("rail_optimized", 2, 128, 1025, 8)).find("8200 NICs"), std::string::npos);
}

TEST(Generators, ThreeTierLimit) {
  // radix 8: pods of 4 leaves, at most 8 pods -> 32 leaves x 4 NICs.
  EXPECT_NO_THROW((void)build_fabric(small("fat_tree", 3, 8, 128, 1)));
  const std::string e = error_of(small("fat_tree", 3, 8, 129, 1));
  EXPECT_NE(e.find("cluster.fabric.tiers"), std::string::npos) << e;
  EXPECT_NE(e.find("at most 128 NICs"), std::string::npos) << e;
}

TEST(Generators, OversubscriptionGivesFewerUplinks) {
  FabricConfig c = default_cluster();
  c.oversubscription = 1.2;
  const Topology t = build_fabric(c);
  const VertexId leaf = t.leaf_of(0);
  const int down = degree_to(t, leaf, VertexKind::nic);
  const int up = degree_to(t, leaf, VertexKind::switch_);
  EXPECT_EQ(down, 70);
  EXPECT_EQ(up, 58);
  EXPECT_LT(up, down);
  EXPECT_EQ(t.switch_count(1), 19 * 8);  // ceil(1280 / 70) rail groups
}

TEST(Generators, MultiPlane) {
  FabricConfig c = default_cluster();
  c.topology = "multi_plane";
  c.planes = 2;
  const Topology t = build_fabric(c);
  EXPECT_EQ(t.switch_count(1), 2 * 160);
  EXPECT_EQ(t.switch_count(2), 2 * 192);
  for (int n = 0; n < t.nic_count(); n += 97) {
    const auto leaves = t.leaves_of(n);
    ASSERT_EQ(leaves.size(), 2u);
    EXPECT_EQ(t.vertex(leaves[0]).plane, 0);
    EXPECT_EQ(t.vertex(leaves[1]).plane, 1);
  }
  EXPECT_EQ(t.capacity(t.out_links(0)[0]), sim::Bandwidth::gbps(200));
  EXPECT_TRUE(t.find_vertex("leaf3.plane1").has_value());
}

TEST(Generators, Latency) {
  FabricConfig c = default_cluster();
  const Topology t = build_fabric(c);
  const LinkDir up = t.out_links(0)[0];
  EXPECT_EQ(t.latency(up), c.link_latency + c.switch_latency);
  EXPECT_EQ(t.latency(Topology::reverse(up)), c.link_latency);
  EXPECT_EQ(t.name(up), "node0.nic0->leaf0");
}

TEST(Generators, ErrorsNameTheKey) {
  FabricConfig c = default_cluster();
  c.switch_radix = 127;
  EXPECT_NE(error_of(c).find("cluster.fabric.switch_radix: got 127"), std::string::npos);
  c.switch_radix = 0;
  EXPECT_NE(error_of(c).find("cluster.fabric.switch_radix"), std::string::npos);
  c = default_cluster();
  c.oversubscription = 0.5;
  EXPECT_NE(error_of(c).find("cluster.fabric.oversubscription: got 0.5"), std::string::npos);
  c = default_cluster();
  c.nics_per_node = 0;
  EXPECT_NE(error_of(c).find("cluster.nics_per_node"), std::string::npos);
  c = default_cluster();
  c.link_rate = sim::Bandwidth::gbps(0);
  EXPECT_NE(error_of(c).find("cluster.nic: got 0 Gbps"), std::string::npos) << error_of(c);
  c = default_cluster();
  c.tiers = 4;
  EXPECT_NE(error_of(c).find("cluster.fabric.tiers: got 4"), std::string::npos);
  c = default_cluster();
  c.topology = "torus";
  EXPECT_NE(error_of(c).find("cluster.fabric.topology"), std::string::npos);
  c = default_cluster();
  c.planes = 2;
  EXPECT_NE(error_of(c).find("cluster.fabric.planes"), std::string::npos);
  c = default_cluster();
  c.nodes = 0;
  EXPECT_NE(error_of(c).find("cluster.nodes"), std::string::npos);
}

}  // namespace
}  // namespace ct::topology

namespace ct::topology::testing {
namespace {

// switch_count (from the shape, without building) equals the built fabric's switch count.
TEST(Generators, SwitchCountWithoutBuildingMatchesTheBuiltFabric) {
  std::vector<FabricConfig> configs{default_cluster(), small("rail_optimized", 2, 64, 64, 8),
                                    small("fat_tree", 2, 32, 100, 4), small("rail_optimized", 3, 32, 300, 8)};
  FabricConfig planes = small("multi_plane", 2, 64, 64, 8);
  planes.planes = 2;
  configs.push_back(planes);
  FabricConfig thin = default_cluster();
  thin.oversubscription = 1.2;
  configs.push_back(thin);
  for (const FabricConfig& c : configs) {
    EXPECT_EQ(switch_count(c), build_fabric(c).switch_count()) << c.topology << " tiers " << c.tiers;
  }
  EXPECT_EQ(switch_count(default_cluster()), 160 + 192 + 128);
}

}  // namespace
}  // namespace ct::topology::testing
