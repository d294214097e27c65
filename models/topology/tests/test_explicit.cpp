#include <gtest/gtest.h>

#include <set>
#include <string>

#include "models/topology/tests/fixtures.h"

namespace ct::topology {
namespace {

// Two nodes x 2 NICs on two leaves, two spines, one core above spine "s1" only.
FabricConfig explicit_config() {
  FabricConfig c;
  c.topology = "explicit";
  c.nodes = 2;
  c.nics_per_node = 2;
  c.links = {{"node0.nic0", "tor-a", {}, {}},
             {"node0.nic1", "tor-a", {}, {}},
             {"node1.nic0", "tor-b", {}, {}},
             {"node1.nic1", "tor-b", {}, {}},
             {"tor-a", "s0", {}, {}},
             {"tor-a", "s1", sim::Bandwidth::gbps(100), {}},
             {"tor-b", "s0", {}, {}},
             {"tor-b", "s1", {}, sim::Duration::us(2)},
             {"s1", "top", {}, {}}};
  return c;
}

TEST(Explicit, BuildsAndInfersTiers) {
  const Topology t = build_fabric(explicit_config());
  EXPECT_EQ(t.nic_count(), 4);
  EXPECT_EQ(t.switch_count(1), 2);
  EXPECT_EQ(t.switch_count(2), 2);
  EXPECT_EQ(t.switch_count(3), 1);
  EXPECT_EQ(t.link_count(), 9);
  EXPECT_EQ(t.vertex(t.leaf_of(3)).name, "tor-b");
  const auto d = t.find_link("tor-a", "s1");
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(t.capacity(*d).gbps_value(), 100.0);
  const auto l = t.find_link("s1->tor-b");
  ASSERT_TRUE(l);
  EXPECT_EQ(t.latency(*l), sim::Duration::us(2) + sim::Duration::ns(600));
}

TEST(Explicit, RoutesAndFailsOver) {
  Topology t = build_fabric(explicit_config());
  EXPECT_EQ(t.route(0, 1, 0).size(), 2u);
  bool s0 = false;
  bool s1 = false;
  for (uint64_t flow = 0; flow < 32; ++flow) {
    const Path p = t.route(0, 3, flow);
    testing::expect_valid_path(t, p, 0, 3);
    ASSERT_EQ(p.size(), 4u);
    s0 = s0 || t.vertex(t.target(p[1])).name == "s0";
    s1 = s1 || t.vertex(t.target(p[1])).name == "s1";
  }
  EXPECT_TRUE(s0 && s1);
  t.fail_switch(t.vertex_id("s0"));
  for (uint64_t flow = 0; flow < 32; ++flow) {
    EXPECT_EQ(t.vertex(t.target(t.route(0, 3, flow)[1])).name, "s1");
  }
  t.set_link_state(*t.find_link("tor-b", "s1"), LinkState::down);
  EXPECT_THROW((void)t.route(0, 3, 0), NoRouteError);
}

std::string error_of(const FabricConfig& c) {
  try {
    (void)build_fabric(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(Explicit, Errors) {
  FabricConfig c = explicit_config();
  c.links[2].a = "node1.nicX";
  EXPECT_NE(error_of(c).find("cluster.fabric.links[2].a"), std::string::npos) << error_of(c);
  c = explicit_config();
  c.links[3].a = "node2.nic0";
  EXPECT_NE(error_of(c).find("node < 2"), std::string::npos) << error_of(c);
  c = explicit_config();
  c.links[0].b = "node1.nic1";
  EXPECT_NE(error_of(c).find("cluster.fabric.links[0]"), std::string::npos);
  c = explicit_config();
  c.links[4].b = "tor-a";
  EXPECT_NE(error_of(c).find("itself"), std::string::npos);
  c.links.clear();
  EXPECT_NE(error_of(c).find("cluster.fabric.links"), std::string::npos);
}

TEST(Explicit, WideSwitchSpreadsOverAllNextHops) {
  // 600 spines: more next hops than route()'s gather buffer holds.
  FabricConfig c;
  c.topology = "explicit";
  c.nodes = 2;
  c.nics_per_node = 1;
  c.links = {{"node0.nic0", "a", {}, {}}, {"node1.nic0", "b", {}, {}}};
  for (int i = 0; i < 600; ++i) {
    c.links.push_back({"a", "s" + std::to_string(i), {}, {}});
    c.links.push_back({"b", "s" + std::to_string(i), {}, {}});
  }
  const Topology t = build_fabric(c);
  std::set<VertexId> used;
  for (uint64_t flow = 0; flow < 3000; ++flow) {
    const Path p = t.route(0, 1, flow);
    testing::expect_valid_path(t, p, 0, 1);
    used.insert(t.target(p[1]));
  }
  EXPECT_GT(used.size(), 550u);
}

TEST(Explicit, UnattachedNicHasNoRoute) {
  FabricConfig c = explicit_config();
  c.nodes = 3;
  const Topology t = build_fabric(c);
  EXPECT_EQ(t.leaf_of(4), -1);
  EXPECT_THROW((void)t.route(0, 4, 0), NoRouteError);
}

}  // namespace
}  // namespace ct::topology
