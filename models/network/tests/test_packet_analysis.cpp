// Packet backend, congestion-spreading analysis: the pause propagation tree, victim flows,
// the cyclic-buffer-dependency check (and the PFC deadlock a cycle allows).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "models/network/cluster.h"
#include "models/network/packet_analysis.h"
#include "models/network/packet_network.h"
#include "models/network/tests/fixtures.h"

namespace ct::network {
namespace {

using testing::Recorder;
using testing::small_cluster;

constexpr int64_t kMiB = int64_t{1} << 20;

PacketParams pfc_only() {
  PacketParams p;
  p.pfc.xoff_bytes = 217'942;  // static: the mlx5 headroom formula at 400 Gb/s, 100 m
  p.ecn.enabled = false;
  p.congestion_control = CongestionControl::none;
  return p;
}

const PauseEdge* edge(const PacketStats& s, const std::string& paused) {
  for (const PauseEdge& e : s.pause_tree) {
    if (e.paused_name == paused) return &e;
  }
  return nullptr;
}

TEST(PacketAnalysis, PauseTreeOfAStormCascadeCountsHopsUpTheClos) {
  // Radix 4, 2 tiers: node 2 (leaf1) sends to node 0 (leaf0) through a spine; node 0 storms.
  const Cluster c(small_cluster(4, 1, 4, 2));
  sim::Simulation sim;
  PacketParams pp = pfc_only();
  pp.pfc.watchdog = sim::Duration::ms(1);
  PacketNetwork net(sim, c, {}, pp);
  Recorder rec(sim);
  net.send(16, 0, sim::Bytes{8 * kMiB}, rec, 0);
  net.inject_pause_storm(0, sim::Time::zero() + sim::Duration::us(50));
  sim.run();
  const PacketStats s = net.packet_stats();
  std::vector<int32_t> path;
  c.path(16, 0, 0, path);  // pcie_tx, node2->leaf1, leaf1->spine, spine->leaf0, leaf0->node0, pcie_rx
  ASSERT_EQ(path.size(), 6U);
  const std::string root = c.resource_name(path[4]);
  double last = -1.0;
  for (int h = 0; h <= 3; ++h) {
    const std::string name = c.resource_name(path[static_cast<size_t>(4 - h)]);
    const PauseEdge* e = edge(s, name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->hop, h) << name;
    EXPECT_EQ(e->root_name, root) << name;
    EXPECT_EQ(e->pausing_name,
              c.resource_name(topology::Topology::reverse(path[static_cast<size_t>(4 - h)])));
    EXPECT_GT(e->first_s, last) << name;  // the tree grows upstream over time
    EXPECT_GE(e->frames, 1U);
    last = e->first_s;
    std::printf("pause tree: %-22s paused by %-22s at %8.3f us, hop %d, root %s, %llu frames\n",
                e->paused_name.c_str(), e->pausing_name.c_str(), e->first_s * 1e6, e->hop,
                e->root_name.c_str(), static_cast<unsigned long long>(e->frames));
  }
  EXPECT_EQ(s.pause_tree.size(), 4U);
  EXPECT_EQ(s.max_pause_hops, 3);
  EXPECT_EQ(s.victim_flow_count, 0U);  // the only flow goes to the stormed port
  EXPECT_EQ(s.paused_flows, 1U);
  EXPECT_EQ(s.pfc_storms.size(), 1U);
}

TEST(PacketAnalysis, IncastRootIsTheBottleneckAndSendersAreOneHopUp) {
  const Cluster c(small_cluster(9, 1, 128, 2));
  sim::Simulation sim;
  PacketParams pp = pfc_only();
  pp.switch_buffer_bytes = 4 * kMiB;
  PacketNetwork net(sim, c, {}, pp);
  Recorder rec(sim);
  for (int i = 1; i <= 8; ++i) net.send(8 * i, 0, sim::Bytes{4 * kMiB}, rec, static_cast<uint64_t>(i));
  sim.run();
  const PacketStats s = net.packet_stats();
  ASSERT_EQ(s.pause_tree.size(), 8U);
  for (const PauseEdge& e : s.pause_tree) {
    EXPECT_EQ(e.hop, 1) << e.paused_name;
    EXPECT_EQ(e.root_name, "leaf0->node0.nic0");
    EXPECT_EQ(e.paused_name.substr(e.paused_name.size() - 7), "->leaf0");
  }
  EXPECT_EQ(s.max_pause_hops, 1);
  EXPECT_EQ(s.paused_flows, 8U);
  EXPECT_EQ(s.victim_flow_count, 0U);
}

// An event that does nothing: moves the clock to a chosen time.
struct Tick final : sim::EventHandler {
  void on_event(uint64_t /*tag*/) override {}
};

TEST(PacketAnalysis, VictimFlowSharesAPausedNicButNotTheStormedPort) {
  const Cluster c(small_cluster(9, 1, 128, 2));
  sim::Simulation sim;
  PacketNetwork net(sim, c, {}, pfc_only());
  Recorder rec(sim);
  for (int i = 1; i <= 4; ++i) net.send(8 * i, 0, sim::Bytes{8 * kMiB}, rec, static_cast<uint64_t>(i));
  net.send(8, 48, sim::Bytes{8 * kMiB}, rec, 5);   // node1 -> node6: behind node1's paused NIC
  net.send(40, 56, sim::Bytes{8 * kMiB}, rec, 6);  // node5 -> node7: untouched
  net.inject_pause_storm(0, sim::Time::zero() + sim::Duration::us(20));
  Tick tick;
  sim.schedule_at(sim::Time::zero() + sim::Duration::ms(100), tick);
  sim.run_until(sim::Time::zero() + sim::Duration::ms(100));
  {
    const PacketStats s = net.packet_stats();
    EXPECT_EQ(rec.count, 1);  // only node5 -> node7 is through
    ASSERT_EQ(s.victim_flow_count, 1U);
    ASSERT_EQ(s.victim_flows.size(), 1U);
    const VictimFlow& v = s.victim_flows[0];
    EXPECT_EQ(v.src_gpu, 8);
    EXPECT_EQ(v.dst_gpu, 48);
    EXPECT_EQ(v.tag, 5U);
    EXPECT_FALSE(v.completed);
    EXPECT_GT(v.paused_s, 0.09);
    EXPECT_EQ(s.paused_flows, 5U);
  }
  sim.run();
  const PacketStats s = net.packet_stats();
  EXPECT_EQ(rec.count, 6);
  ASSERT_EQ(s.victim_flows.size(), 1U);
  const VictimFlow& v = s.victim_flows[0];
  EXPECT_TRUE(v.completed);
  // Paused from shortly after the storm (20 us) to the watchdog (200 ms later).
  EXPECT_GT(v.paused_s, 0.19);
  EXPECT_LT(v.paused_s, 0.201);
  EXPECT_DOUBLE_EQ(s.victim_paused_time_s, v.paused_s);
  std::printf("victim %d -> %d paused %.6f s; %llu flows paused, %llu victims\n", v.src_gpu, v.dst_gpu,
              v.paused_s, static_cast<unsigned long long>(s.paused_flows),
              static_cast<unsigned long long>(s.victim_flow_count));
}

TEST(PacketAnalysis, VictimListIsBounded) {
  const Cluster c(small_cluster(9, 1, 128, 2));
  sim::Simulation sim;
  PacketParams pp = pfc_only();
  pp.max_victim_flows = 2;
  PacketNetwork net(sim, c, {}, pp);
  Recorder rec(sim);
  net.send(8, 0, sim::Bytes{8 * kMiB}, rec, 0);
  for (int k = 1; k <= 4; ++k) net.send(8, 8 * (k + 1), sim::Bytes{kMiB}, rec, static_cast<uint64_t>(k));
  net.inject_pause_storm(0, sim::Time::zero() + sim::Duration::us(1));
  sim.run();
  const PacketStats s = net.packet_stats();
  EXPECT_EQ(s.victim_flow_count, 4U);
  EXPECT_EQ(s.victim_flows.size(), 2U);
}

TEST(PacketAnalysis, CycleDetectorOnHandBuiltGraphs) {
  using E = std::pair<int32_t, int32_t>;
  const std::vector<E> dag = {{0, 1}, {1, 2}, {0, 2}, {2, 3}, {4, 3}};
  EXPECT_TRUE(find_cycle(5, dag).empty());
  EXPECT_TRUE(find_cycle(0, {}).empty());
  const std::vector<E> loop = {{0, 1}, {1, 2}, {2, 3}, {3, 1}, {3, 4}};
  EXPECT_EQ(find_cycle(5, loop), (std::vector<int32_t>{1, 2, 3}));
  const std::vector<E> self = {{0, 1}, {2, 2}};
  EXPECT_EQ(find_cycle(3, self), (std::vector<int32_t>{2}));
  const std::vector<E> bad = {{0, 7}};
  EXPECT_THROW((void)find_cycle(3, bad), std::out_of_range);
  const double fair[] = {1.0, 1.0, 1.0};
  const double one[] = {1.0, 0.0, 0.0};
  EXPECT_DOUBLE_EQ(jain_index(fair), 1.0);
  EXPECT_NEAR(jain_index(one), 1.0 / 3.0, 1e-12);
}

TEST(PacketAnalysis, UpDownClosRoutesHaveNoBufferDependencyCycle) {
  // 3 tiers, radix 4: all-to-all between 8 nodes crosses leaves, spines and cores.
  const Cluster c(small_cluster(8, 1, 4, 3));
  sim::Simulation sim;
  PacketNetwork net(sim, c);
  Recorder rec(sim);
  uint64_t tag = 0;
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a != b) net.send(8 * a, 8 * b, sim::Bytes{16 * 1024}, rec, tag++);
    }
  }
  sim.run();
  const PacketStats s = net.packet_stats();
  EXPECT_EQ(rec.count, 56);
  EXPECT_GT(s.dependency_edges, 20U);
  EXPECT_FALSE(s.buffer_dependency_cycle);
  EXPECT_TRUE(s.dependency_cycle.empty());
}

// Five switches in a ring, one NIC each; node i sends to node i + 2: the only shortest route
// is two hops clockwise, so the ring directions depend on each other in a cycle.
ClusterSpec ring_cluster() {
  ClusterSpec spec = small_cluster(5, 1, 8, 2);
  spec.fabric.topology = "explicit";
  for (int i = 0; i < 5; ++i) {
    spec.fabric.links.push_back({"node" + std::to_string(i) + ".nic0", "s" + std::to_string(i), {}, {}});
    spec.fabric.links.push_back({"s" + std::to_string(i), "s" + std::to_string((i + 1) % 5), {}, {}});
  }
  return spec;
}

TEST(PacketAnalysis, RingRoutesFormACycleAndPfcDeadlocks) {
  const Cluster c(ring_cluster());
  sim::Simulation sim;
  PacketParams pp = pfc_only();
  pp.pfc.watchdog = sim::Duration::zero();  // no watchdog: nothing breaks the deadlock
  pp.switch_buffer_bytes = 2 * kMiB;
  PacketNetwork net(sim, c, {}, pp);
  Recorder rec(sim);
  // Two flows per source so that every ring link is shared and ingress queues build up.
  for (int i = 0; i < 5; ++i) {
    const int dst = (i + 2) % 5;
    net.send(8 * i, 8 * dst, sim::Bytes{32 * kMiB}, rec, static_cast<uint64_t>(i));
    net.send(8 * i + 1, 8 * dst + 1, sim::Bytes{32 * kMiB}, rec, static_cast<uint64_t>(10 + i));
  }
  sim.run();  // returns when no event is left: every flow done, or deadlocked
  const PacketStats s = net.packet_stats();
  EXPECT_EQ(rec.count, 0);  // deadlock: every ring link paused by the next, for ever
  EXPECT_LT(sim.now().seconds(), 1e-3);
  EXPECT_TRUE(s.buffer_dependency_cycle);
  ASSERT_EQ(s.dependency_cycle.size(), 5U);
  for (const std::string& d : s.dependency_cycle) {
    EXPECT_EQ(d[0], 's') << d;
    std::printf("cycle: %s\n", d.c_str());
  }
  std::printf("ring: delivered %d of 10, simulation stopped at %.3f us, pauses %llu\n", rec.count,
              sim.now().seconds() * 1e6, static_cast<unsigned long long>(s.pfc_pause_frames));
}

}  // namespace
}  // namespace ct::network
