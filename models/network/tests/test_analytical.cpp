// Closed forms that hold in both backends when nothing contends (parametrized over mode),
// and the alpha-beta backend's indifference to contention.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/network/analytical_network.h"
#include "models/network/cluster.h"
#include "models/network/network.h"
#include "models/network/tests/fixtures.h"

namespace ct::network {
namespace {

using testing::Recorder;
using testing::small_cluster;
using testing::wire_s;

class BothModes : public ::testing::TestWithParam<std::string> {};

TEST_P(BothModes, SingleInterNodeTransferIsLatencyPlusBytesOverBottleneck) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  auto net = make_network(GetParam(), sim, c);
  Recorder rec(sim);
  const double bytes = 256.0 * (1 << 20);
  net->send(2, 8 + 2, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 0);
  sim.run();
  EXPECT_DOUBLE_EQ(net->path_bandwidth(2, 10).bps(), 400e9);  // NIC < PCIe 512 Gb/s
  const double expected = net->path_latency(2, 10).seconds() + wire_s(bytes, 400e9);
  EXPECT_NEAR(rec.times[0], expected, 1e-3 * expected);
}

TEST_P(BothModes, IntraNodeTransferUsesNvlink) {
  const Cluster c(small_cluster(1));
  sim::Simulation sim;
  auto net = make_network(GetParam(), sim, c);
  Recorder rec(sim);
  const double bytes = 1e9;
  net->send(0, 5, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 0);
  sim.run();
  const double expected = 700e-9 + wire_s(bytes, 450e9 * 8);
  EXPECT_NEAR(rec.times[0], expected, 1e-3 * expected);
}

TEST_P(BothModes, ChainGoesAtTheSlowestLegPlusFixedLatency) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  auto net = make_network(GetParam(), sim, c);
  Recorder rec(sim);
  // NVLink leg (3600 Gb/s) and an inter-node leg (400 Gb/s): the chain moves at 400 Gb/s.
  const std::array<Leg, 2> legs{Leg{0, 1}, Leg{1, 9}};
  const double bytes = 64.0 * (1 << 20);
  net->send_pipelined(legs, sim::Bytes{static_cast<int64_t>(bytes)}, sim::Duration::us(10), testing::kNoCap,
                      rec, 0);
  sim.run();
  const double expected = 10e-6 + wire_s(bytes, 400e9);
  EXPECT_NEAR(rec.times[0], expected, 1e-6 * expected);
}

TEST_P(BothModes, ChainRateNeverExceedsItsCap) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  auto net = make_network(GetParam(), sim, c);
  Recorder rec(sim);
  const std::array<Leg, 2> legs{Leg{0, 1}, Leg{1, 9}};
  const double bytes = 64.0 * (1 << 20);
  net->send_pipelined(legs, sim::Bytes{static_cast<int64_t>(bytes)}, sim::Duration::zero(), 100e9, rec, 0);
  sim.run();
  const double expected = wire_s(bytes, 100e9);  // the 400 Gb/s leg would allow 4x more
  EXPECT_NEAR(rec.times[0], expected, 1e-6 * expected);
}

TEST_P(BothModes, ChainCrossingAPortTwiceGetsHalfOfIt) {
  const Cluster c(small_cluster(2, 4));  // GPUs 0 and 1 share NIC 0
  sim::Simulation sim;
  auto net = make_network(GetParam(), sim, c);
  Recorder rec(sim);
  const std::array<Leg, 2> legs{Leg{0, 8}, Leg{1, 9}};
  const double bytes = 64.0 * (1 << 20);
  net->send_pipelined(legs, sim::Bytes{static_cast<int64_t>(bytes)}, sim::Duration::zero(), testing::kNoCap,
                      rec, 0);
  sim.run();
  const double expected = wire_s(bytes, 200e9);
  EXPECT_NEAR(rec.times[0], expected, 1e-6 * expected);
}

TEST_P(BothModes, SelfSendAndZeroBytes) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  auto net = make_network(GetParam(), sim, c);
  Recorder rec(sim);
  net->send(3, 3, sim::Bytes{1 << 20}, rec, 0);
  net->send(3, 12, sim::Bytes{0}, rec, 1);
  sim.run();
  EXPECT_EQ(rec.count, 2);
  EXPECT_EQ(rec.times[0], 0.0);
  EXPECT_NEAR(rec.times[1], net->path_latency(3, 12).seconds(), 1e-12);
}

TEST_P(BothModes, StatisticsCountWireBytes) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  auto net = make_network(GetParam(), sim, c);
  Recorder rec(sim);
  const double bytes = 95e6;
  net->send(0, 8, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 0);
  sim.run();
  const auto s = net->link_stats(c.pcie_tx(0));
  EXPECT_NEAR(s.bytes, 100e6, 1e-3 * 100e6);
  EXPECT_EQ(s.name, "gpu0.pcie_tx");
  const auto top = net->top_links(3);
  ASSERT_EQ(top.size(), 3U);
  // The NIC links (400 Gb/s) are the busiest: they were busy almost the whole run.
  EXPECT_GT(top[0].utilization, 0.9);
  EXPECT_LE(top[0].utilization, 1.0 + 1e-9);
  EXPECT_DOUBLE_EQ(net->max_link_utilization(), top[0].utilization);
  EXPECT_TRUE(top[0].name.find("nic0") != std::string::npos) << top[0].name;
}

// Capacities shared by the runs of a layout sweep (NetworkParams::shared_capacities): a network
// reads them as its own, and a capacity change (a fault) copies them first, so the other runs
// keep the cluster's.
TEST_P(BothModes, SharedCapacitiesAreReadAndNeverWritten) {
  const Cluster c(small_cluster(2));
  const auto caps = std::make_shared<const std::vector<double>>(resource_capacities(c));
  NetworkParams params;
  params.shared_capacities = caps;
  sim::Simulation sim;
  auto net = make_network(GetParam(), sim, c, params);
  EXPECT_DOUBLE_EQ(net->path_bandwidth(2, 10).bps(), 400e9);
  std::vector<int32_t> path;
  (void)c.path(2, 10, 0, path);
  for (const int32_t r : path) net->set_resource_capacity(r, sim::Bandwidth::gbps(100));
  EXPECT_DOUBLE_EQ(net->path_bandwidth(2, 10).bps(), 100e9);
  EXPECT_EQ(*caps, resource_capacities(c));
  // Capacities of another cluster are refused.
  NetworkParams other;
  other.shared_capacities = std::make_shared<const std::vector<double>>(3, 1e9);
  EXPECT_THROW(make_network(GetParam(), sim, c, other), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(Network, BothModes, ::testing::Values("analytical", "flow"));

TEST(Analytical, IgnoresContention) {
  const Cluster c(small_cluster(2, 4));
  sim::Simulation sim;
  auto net = make_network("analytical", sim, c);
  Recorder rec(sim);
  const double bytes = 64.0 * (1 << 20);
  net->send(0, 8, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 0);
  net->send(1, 9, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 1);
  sim.run();
  EXPECT_DOUBLE_EQ(rec.times[0], rec.times[1]);
  const double expected = net->path_latency(0, 8).seconds() + wire_s(bytes, 400e9);
  EXPECT_NEAR(rec.times[1], expected, 1e-6 * expected);
}

}  // namespace
}  // namespace ct::network

namespace ct::network {
namespace {

// A named chain (send_chain) and, without link statistics, the bottleneck taken without the
// list of uses (analytical_network.cpp bottleneck()) give every call the time send_pipelined
// gives it: same ECMP draws by tag, same rate to the last bit.
TEST(Analytical, NamedChainsAndTheBottleneckWithoutUsesKeepEveryTime) {
  const Cluster c(testing::small_cluster(16, 8, 16));
  // Every GPU to its neighbour in the node (NVLink: one path), to the next node on its rail
  // (inside a leaf group: one path) and on the next rail (over the spines: an ECMP choice), so
  // that unique and ECMP legs share the NIC ports.
  std::vector<Leg> legs;
  for (int g = 0; g < 128; ++g) {
    legs.push_back(Leg{g, g / 8 * 8 + (g + 1) % 8});
    legs.push_back(Leg{g, (g + 8) % 128});
    legs.push_back(Leg{g, (g + 9) % 128});
  }
  std::vector<std::vector<double>> runs;
  for (const bool stats : {true, false}) {
    for (const bool named : {false, true}) {
      sim::Simulation sim;
      NetworkParams p;
      p.link_statistics = stats;
      auto net = make_network("analytical", sim, c, p);
      Recorder rec(sim);
      const sim::Bytes bytes{int64_t{64} << 20};
      for (uint64_t tag = 0; tag < 64; ++tag) {
        if (named) {
          net->send_chain(7, legs, bytes, sim::Duration::us(5), testing::kNoCap, rec, tag);
        } else {
          net->send_pipelined(legs, bytes, sim::Duration::us(5), testing::kNoCap, rec, tag);
        }
      }
      // GPU 0 to GPU 8 (its rail, one leaf: one path) and to GPU 9 (another rail: over a
      // spine): both leave by GPU 0's NIC, whose port they halve, the chain's bottleneck.
      const std::array<Leg, 2> shared{Leg{0, 8}, Leg{0, 9}};
      if (named) {
        net->send_chain(8, shared, bytes, sim::Duration::zero(), testing::kNoCap, rec, 64);
      } else {
        net->send_pipelined(shared, bytes, sim::Duration::zero(), testing::kNoCap, rec, 64);
      }
      sim.run();
      ASSERT_EQ(rec.count, 65);
      EXPECT_NEAR(rec.times[64], wire_s(64.0 * (1 << 20), 200e9), 1e-9);
      runs.push_back(rec.times);
    }
  }
  for (size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[i], runs[0]) << i;
  // Every leg keeps its connection's path whatever the tag (network.h chain_leg_flow): every
  // call of the chain takes the same time.
  for (size_t i = 1; i < 64; ++i) EXPECT_EQ(runs[0][i], runs[0][0]) << i;
}

// The same in both backends, one chain at a time: a ring's legs over the spines of a 3-tier
// fabric (an ECMP choice at every hop up) take the same paths under any tag, so a collective
// repeated by a step costs the same each time; a chain that lists the same legs in another
// order puts other connections on them, which may collide elsewhere.
TEST(Network, AChainKeepsItsConnectionsPathsWhateverTheTag) {
  const Cluster c(testing::small_cluster(16, 8, 16));
  std::vector<Leg> ring;
  for (int n = 0; n < 16; ++n) ring.push_back(Leg{n * 8 + 1, (n + 5) % 16 * 8 + 2});
  for (const std::string mode : {"analytical", "flow"}) {
    std::vector<double> times;
    for (const uint64_t tag : {uint64_t{0}, uint64_t{1}, uint64_t{57}}) {
      sim::Simulation sim;
      auto net = make_network(mode, sim, c);
      Recorder rec(sim);
      net->send_pipelined(ring, sim::Bytes{int64_t{256} << 20}, sim::Duration::zero(), testing::kNoCap, rec,
                          tag);
      sim.run();
      ASSERT_EQ(rec.count, 1);
      times.push_back(rec.times[tag]);
    }
    EXPECT_EQ(times[1], times[0]) << mode;
    EXPECT_EQ(times[2], times[0]) << mode;
  }
}

}  // namespace
}  // namespace ct::network

namespace ct::network {
namespace {

// The remembered connection routes (a direct-mapped table by the connection's hash, 4,096 slots)
// give every send the time a fresh network gives it, with more connections than slots (slots
// shared and overwritten) and after a capacity change (every remembered route stale), with and
// without link statistics (which route each send afresh).
TEST(Analytical, RememberedConnectionRoutesKeepEverySendsTime) {
  const Cluster c(testing::small_cluster(16, 8, 16));
  std::vector<std::array<int, 3>> sends;  // src, dst, flow id: 128 x 128 pairs x 2 flows
  for (int s = 0; s < 128; ++s) {
    for (int d = 0; d < 128; d += 3) {
      if (s != d) sends.push_back({s, d, (s * 7 + d) % 5});
    }
  }
  std::vector<int32_t> slowed;  // the links of one cross-rail path, slowed in the second round
  (void)c.path(0, 8 + 1, 0, slowed);
  auto times = [&](bool stats, bool one_network, bool slow_spine) {
    std::vector<double> out;
    sim::Simulation sim;
    NetworkParams p;
    p.link_statistics = stats;
    std::unique_ptr<Network> shared = make_network("analytical", sim, c, p);
    for (size_t round = 0; round < 2; ++round) {
      if (round == 1 && slow_spine) {
        for (const int32_t r : slowed) shared->set_resource_capacity(r, sim::Bandwidth::gbps(50));
      }
      for (const auto& [s, d, f] : sends) {
        sim::Simulation own_sim;
        std::unique_ptr<Network> own = one_network ? nullptr : make_network("analytical", own_sim, c, p);
        if (own && round == 1 && slow_spine) {
          for (const int32_t r : slowed) own->set_resource_capacity(r, sim::Bandwidth::gbps(50));
        }
        Network& net = own ? *own : *shared;
        sim::Simulation& at = own ? own_sim : sim;
        Recorder rec(at);
        const double start = at.now().seconds();
        net.send_flow(s, d, static_cast<uint64_t>(f), sim::Bytes{int64_t{1} << 20}, rec, 0);
        at.run();
        out.push_back(rec.times.at(0) - start);
      }
    }
    return out;
  };
  // The slowed links change some sends' times (so the second round needs the new routes).
  EXPECT_NE(times(false, false, true), times(false, false, false));
  // Times are whole picoseconds; the shared simulation's clock has moved on, so compare to 1 ps.
  for (const bool slow : {false, true}) {
    const std::vector<double> fresh = times(false, false, slow);
    for (const bool stats : {false, true}) {
      const std::vector<double> kept = times(stats, true, slow);
      ASSERT_EQ(kept.size(), fresh.size());
      size_t differ = 0;
      for (size_t i = 0; i < kept.size(); ++i) differ += std::abs(kept[i] - fresh[i]) > 1e-12 ? 1 : 0;
      EXPECT_EQ(differ, 0U) << "stats " << stats << " slow " << slow;
    }
  }
}

}  // namespace
}  // namespace ct::network
