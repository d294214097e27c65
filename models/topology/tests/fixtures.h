// Shared helpers of the topology tests.
#pragma once

#include <gtest/gtest.h>

#include "models/topology/topology.h"

namespace ct::topology::testing {

// The default scenario's cluster: 1,280 nodes x 8 NICs, radix 128, 3 tiers, 400 Gbps.
inline FabricConfig default_cluster() { return FabricConfig{}; }

inline FabricConfig small(std::string topology, int tiers, int radix, int nodes, int nics) {
  FabricConfig c;
  c.topology = std::move(topology);
  c.tiers = tiers;
  c.switch_radix = radix;
  c.nodes = nodes;
  c.nics_per_node = nics;
  return c;
}

// The path starts at the source NIC, each hop starts where the previous one ended, it ends at
// the destination NIC, and every direction is usable.
inline void expect_valid_path(const Topology& t, const Path& p, int src, int dst) {
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(t.source(p.front()), src);
  EXPECT_EQ(t.target(p.back()), dst);
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_TRUE(t.usable(p[i])) << t.name(p[i]);
    if (i > 0) {
      EXPECT_EQ(t.source(p[i]), t.target(p[i - 1])) << "hop " << i;
    }
    if (i + 1 < p.size()) {
      EXPECT_TRUE(t.is_switch(t.target(p[i])));
    }
  }
}

inline int nic(const Topology& t, int node, int rail) { return node * t.nics_per_node() + rail; }

}  // namespace ct::topology::testing
