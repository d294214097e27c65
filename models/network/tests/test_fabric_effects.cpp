// Fabric effects only the flow backend resolves: ECMP hash collisions and oversubscription,
// on the default-sized 1,280-node rail-optimized Clos.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "models/network/cluster.h"
#include "models/network/network.h"
#include "models/network/tests/fixtures.h"

namespace ct::network {
namespace {

using testing::Recorder;
using testing::small_cluster;
using testing::wire_s;

constexpr double kBytes = 64.0 * (1 << 20);

// Flow ids (tags) for GPU 0 -> 4800 and GPU 8 -> 4808 (nodes 0,1 -> 600,601, rail 0: same
// source leaf, another pod) whose routes take the same leaf -> spine uplink, or share nothing.
struct TagPair {
  uint64_t a, b;
};
TagPair find_tags(const Cluster& c, bool collide) {
  const auto& t = c.topology();
  const auto ra = t.route(c.nic_of(0), c.nic_of(4800), 0);
  for (uint64_t tag = 1; tag < 5000; ++tag) {
    const auto rb = t.route(c.nic_of(8), c.nic_of(4808), tag);
    bool shared = false;
    for (const auto d : rb) shared = shared || std::find(ra.begin(), ra.end(), d) != ra.end();
    if (collide && ra[1] == rb[1]) return {0, tag};
    if (!collide && !shared) return {0, tag};
  }
  ADD_FAILURE() << "no tag found";
  return {0, 0};
}

double finish_time(const std::string& mode, const Cluster& c, TagPair tags, int qps = 1) {
  sim::Simulation sim;
  NetworkParams params;
  params.qps_per_connection = qps;
  auto net = make_network(mode, sim, c, params);
  Recorder rec(sim);
  net->send(0, 4800, sim::Bytes{static_cast<int64_t>(kBytes)}, rec, tags.a);
  net->send(8, 4808, sim::Bytes{static_cast<int64_t>(kBytes)}, rec, tags.b);
  sim.run();
  return std::max(rec.times[tags.a], rec.times[tags.b]);
}

TEST(FabricEffects, EcmpCollisionHalvesRateInFlowModeOnly) {
  const Cluster c(small_cluster(1280));
  const double lat = c.topology().route(c.nic_of(0), c.nic_of(4800), 0).size() == 6 ? 0.0 : -1.0;
  ASSERT_EQ(lat, 0.0) << "expected a 6-hop inter-pod route";
  const TagPair collide = find_tags(c, true);
  const TagPair apart = find_tags(c, false);
  sim::Simulation sim;
  const auto net = make_network("analytical", sim, c);
  const double latency = net->path_latency(0, 4800).seconds();
  const double alone = latency + wire_s(kBytes, 400e9);
  const double shared = latency + wire_s(kBytes, 200e9);
  EXPECT_NEAR(finish_time("flow", c, collide), shared, 1e-6 * shared);
  EXPECT_NEAR(finish_time("flow", c, apart), alone, 1e-6 * alone);
  EXPECT_NEAR(finish_time("analytical", c, collide), alone, 1e-6 * alone);
}

// network.qps_per_connection: the same two colliding connections, each on 16 queue pairs that
// hash onto their own uplinks (NCCL_IB_QPS_PER_CONNECTION): no uplink carries more than a few
// sixteenths of either, so in flow mode both run at the NIC's rate, as if alone; in packet mode
// (one DCQCN flow per queue pair) they finish well before the single-QP collision does.
// Analytical mode has no collision to undo.
TEST(FabricEffects, QueuePairsSpreadCollidingConnections) {
  const Cluster c(small_cluster(1280));
  const TagPair collide = find_tags(c, true);
  sim::Simulation sim;
  const auto net = make_network("analytical", sim, c);
  const double alone = net->path_latency(0, 4800).seconds() + wire_s(kBytes, 400e9);
  EXPECT_NEAR(finish_time("flow", c, collide, 16), alone, 1e-6 * alone);
  EXPECT_NEAR(finish_time("analytical", c, collide, 16), alone, 1e-6 * alone);
  const double packet_one = finish_time("packet", c, collide, 1);
  const double packet_many = finish_time("packet", c, collide, 16);
  EXPECT_GT(packet_one, 1.6 * alone);
  EXPECT_LT(packet_many, 0.75 * packet_one);
  EXPECT_GT(packet_many, 0.95 * alone);
}

TEST(FabricEffects, OversubscribedLeafLimitsCrossPodTraffic) {
  // 1.2:1 at radix 128: a leaf has 70 NIC ports and 58 uplinks. The 70 rail-0 NICs of rail
  // group 0 (nodes 0..69, leaf 0, pod 0) each send to a node of pod 1 (nodes 560..1119):
  // 70 S must cross 58 x 400 Gb/s, so the last ends no sooner than 70/58 x S / 400 Gb/s.
  const Cluster c(small_cluster(1280, 8, 128, 3, 1.2));
  const int gpn = c.gpus_per_node();
  for (const std::string mode : {"flow", "analytical"}) {
    sim::Simulation sim;
    auto net = make_network(mode, sim, c);
    Recorder rec(sim);
    for (int i = 0; i < 70; ++i) {
      net->send(i * gpn, (700 + i) * gpn, sim::Bytes{static_cast<int64_t>(kBytes)}, rec,
                static_cast<uint64_t>(i));
    }
    sim.run();
    const double last = *std::max_element(rec.times.begin(), rec.times.end());
    const double nic_time = wire_s(kBytes, 400e9);
    const double per_flow_goodput = kBytes / (last - net->path_latency(0, 700 * gpn).seconds());
    if (mode == "flow") {
      EXPECT_GE(last, 70.0 / 58.0 * nic_time);
      EXPECT_LT(per_flow_goodput, 0.95 * 50e9 * 58.0 / 70.0 * 1.0001);
    } else {
      EXPECT_NEAR(per_flow_goodput, 0.95 * 50e9, 1e-3 * 50e9);
    }
  }
}

}  // namespace
}  // namespace ct::network
