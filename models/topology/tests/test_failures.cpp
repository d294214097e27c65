#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/topology/tests/fixtures.h"

namespace ct::topology {
namespace {

using testing::expect_valid_path;
using testing::nic;

bool contains(const Path& p, LinkDir d) { return std::find(p.begin(), p.end(), d) != p.end(); }

TEST(Failures, DownLinkIsAvoided) {
  Topology t = build_fabric(testing::default_cluster());
  const int src = nic(t, 0, 0);
  const int dst = nic(t, 1279, 0);
  for (size_t hop = 1; hop < 5; ++hop) {
    const Path before = t.route(src, dst, 7);
    const LinkDir failed = before[hop];
    t.set_link_state(failed, LinkState::down);
    EXPECT_EQ(t.state(failed), LinkState::down);
    EXPECT_EQ(t.state(Topology::reverse(failed)), LinkState::down);
    EXPECT_EQ(t.capacity(failed).bps(), 0.0);
    for (uint64_t flow = 0; flow < 500; ++flow) {
      const Path p = t.route(src, dst, flow);
      expect_valid_path(t, p, src, dst);
      EXPECT_EQ(p.size(), 6u);
      EXPECT_FALSE(contains(p, failed));
    }
  }
}

TEST(Failures, DegradedLinkKeepsRoutes) {
  Topology t = build_fabric(testing::default_cluster());
  const Path before = t.route(0, 10239, 3);
  t.degrade_link(before[2], 0.25);
  EXPECT_EQ(t.state(before[2]), LinkState::degraded);
  EXPECT_DOUBLE_EQ(t.capacity(before[2]).gbps_value(), 100.0);
  EXPECT_DOUBLE_EQ(t.nominal_capacity(before[2]).gbps_value(), 400.0);
  EXPECT_EQ(t.route(0, 10239, 3), before);
  EXPECT_THROW(t.degrade_link(before[2], 0.0), std::invalid_argument);
  EXPECT_THROW(t.degrade_link(before[2], 1.5), std::invalid_argument);
  t.set_link_state(before[2], LinkState::up);
  EXPECT_EQ(t.state(before[2]), LinkState::up);
  EXPECT_DOUBLE_EQ(t.capacity(before[2]).gbps_value(), 400.0);
}

TEST(Failures, IsolatedLeafGivesClearError) {
  Topology t = build_fabric(testing::default_cluster());
  const VertexId leaf = t.leaf_of(0);
  std::vector<LinkDir> uplinks;
  for (LinkDir d : t.out_links(leaf)) {
    if (t.is_switch(t.target(d))) uplinks.push_back(d);
  }
  ASSERT_EQ(uplinks.size(), 64u);
  t.set_link_states(uplinks, LinkState::down);
  EXPECT_EQ(t.route(nic(t, 0, 0), nic(t, 5, 0), 1).size(), 2u);  // same leaf still works
  try {
    (void)t.route(nic(t, 0, 0), nic(t, 1279, 0), 1);
    FAIL() << "expected NoRouteError";
  } catch (const NoRouteError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("node0.nic0"), std::string::npos) << m;
    EXPECT_NE(m.find("node1279.nic0"), std::string::npos) << m;
  }
  EXPECT_EQ(t.hop_count(0, 10239), -1);
  t.set_link_state(uplinks[17], LinkState::up);  // one uplink back: every flow takes it
  for (uint64_t flow = 0; flow < 50; ++flow) {
    EXPECT_EQ(t.route(nic(t, 0, 0), nic(t, 1279, 0), flow)[1], uplinks[17]);
  }
}

TEST(Failures, FailedSwitchIsAvoidedAndRestored) {
  Topology t = build_fabric(testing::default_cluster());
  const VertexId spine = t.vertex_id("spine5.pod0");
  t.fail_switch(spine);
  EXPECT_TRUE(t.switch_failed(spine));
  for (uint64_t flow = 0; flow < 2000; ++flow) {
    const Path p = t.route(0, 10239, flow);
    expect_valid_path(t, p, 0, 10239);
    for (LinkDir d : p) EXPECT_NE(t.target(d), spine);
  }
  t.restore_switch(spine);
  bool used = false;
  for (uint64_t flow = 0; flow < 2000 && !used; ++flow) {
    used = t.target(t.route(0, 10239, flow)[1]) == spine;
  }
  EXPECT_TRUE(used);
  EXPECT_THROW(t.fail_switch(0), std::invalid_argument);
}

TEST(Failures, FindLinkByName) {
  const Topology t = build_fabric(testing::default_cluster());
  const auto d = t.find_link("leaf0", "spine3.pod0");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(t.name(*d), "leaf0->spine3.pod0");
  EXPECT_EQ(t.find_link("leaf0->spine3.pod0"), d);
  EXPECT_EQ(t.find_link("spine3.pod0", "leaf0"), Topology::reverse(*d));
  EXPECT_FALSE(t.find_link("leaf0", "spine3.pod1").has_value());
  EXPECT_FALSE(t.find_link("nope", "leaf0").has_value());
}

}  // namespace
}  // namespace ct::topology
