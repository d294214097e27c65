// Packet backend: agreement with the flow backend, incast with PFC / drops, ECN + DCQCN,
// PFC storm and watchdog, determinism; a throughput figure of a 64-flow permutation.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <vector>

#include "models/network/cluster.h"
#include "models/network/flow_network.h"
#include "models/network/packet_network.h"
#include "models/network/tests/fixtures.h"

namespace ct::network {
namespace {

using testing::Recorder;
using testing::small_cluster;

constexpr int64_t kMiB = int64_t{1} << 20;

// Nine single-NIC nodes on one leaf (2 tiers, radix 128): GPU 8k uses node k's NIC.
ClusterSpec one_leaf() { return small_cluster(9, 1, 128, 2); }

// Wire seconds of `bytes` sent as packets at `bps`.
double packet_wire_s(const PacketNetwork& net, int64_t bytes, double bps) {
  const int64_t mtu = net.packet_params().mtu_bytes;
  const int64_t full = bytes / mtu;
  const int64_t tail = bytes % mtu;
  const double wire = static_cast<double>(full * net.wire_bytes(mtu) + (tail ? net.wire_bytes(tail) : 0));
  return wire * 8.0 / bps;
}

// PFC alone, with the static XOFF of the mlx5 headroom formula at 400 Gb/s and 100 m (the
// pause-spreading tests need pauses early; the dynamic threshold is tested on its own).
PacketParams pfc_only(int64_t buffer = 64 * kMiB) {
  PacketParams p;
  p.switch_buffer_bytes = buffer;
  p.pfc.xoff_bytes = 217'942;
  p.ecn.enabled = false;
  p.congestion_control = CongestionControl::none;
  return p;
}

struct IncastResult {
  PacketStats stats;
  double completion_s = 0.0;
  int delivered = 0;
  uint64_t events = 0;
};

IncastResult incast(const PacketParams& pp, int64_t size, int fan_in = 8, uint64_t seed = 1,
                    int priority = kLosslessPriority) {
  const Cluster c(one_leaf());
  sim::Simulation sim(seed);
  PacketNetwork net(sim, c, {}, pp);
  Recorder rec(sim);
  for (int i = 1; i <= fan_in; ++i) {
    net.send_on(8 * i, 0, sim::Bytes{size}, rec, static_cast<uint64_t>(i), priority);
  }
  sim.run();
  IncastResult r;
  r.stats = net.packet_stats();
  r.delivered = rec.count;
  r.completion_s = *std::max_element(rec.times.begin(), rec.times.end());
  r.events = sim.events_executed();
  return r;
}

const PortPacketStats* port(const PacketStats& s, const std::string& name) {
  for (const PortPacketStats& p : s.ports) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(Packet, HeadroomFormulaAndWireBytes) {
  const Cluster c(one_leaf());
  sim::Simulation sim;
  PacketNetwork net(sim, c);
  // 400 Gb/s, 500 ns link latency = 100 m: (301 + 216) * 400 + 2.72 * 4096 = 217941.1.
  const auto d = *c.topology().find_link("node1.nic0", "leaf0");
  EXPECT_EQ(net.headroom_bytes(d), 217942);
  // Dynamic threshold on an empty 64 MiB buffer: XOFF = 1/8 x 64 MiB, XON one frame lower.
  EXPECT_EQ(net.xoff_bytes(d), 8 * kMiB);
  EXPECT_EQ(net.xon_bytes(d), 8 * kMiB - net.wire_bytes(4096));
  PacketParams fixed;
  fixed.pfc.xoff_bytes = 200'000;
  PacketNetwork static_net(sim, c, {}, fixed);
  EXPECT_EQ(static_net.xoff_bytes(d), 200'000);
  EXPECT_EQ(static_net.xon_bytes(d), 200'000 - static_net.wire_bytes(4096));
  // eff 0.95: ceil(4096 / 0.95) = 4312 > 4096 + 58; a tiny packet pays the RoCEv2 headers.
  EXPECT_EQ(net.wire_bytes(4096), 4312);
  EXPECT_EQ(net.wire_bytes(10), 68);
  PacketParams bad;
  bad.ecn.kmin_bytes = 500'000;
  EXPECT_THROW(PacketNetwork(sim, c, {}, bad), std::invalid_argument);
}

TEST(Packet, MakeNetworkBuildsPacketMode) {
  const Cluster c(one_leaf());
  sim::Simulation sim;
  const auto net = make_network("packet", sim, c);
  ASSERT_NE(net, nullptr);
  Recorder rec(sim);
  net->send(0, 8, sim::Bytes{64 * 1024}, rec, 3);
  sim.run();
  EXPECT_EQ(rec.count, 1);
}

TEST(Packet, UncongestedTransferAgreesWithFlowWithinTwoPercent) {
  // Radix 4, 2 tiers: nodes 0 and 2 sit on different leaves, the path crosses a spine.
  const Cluster c(small_cluster(4, 1, 4, 2));
  const int64_t bytes = 4 * kMiB;
  std::vector<int32_t> path;
  c.path(0, 16, 0, path);
  ASSERT_EQ(path.size(), 6U);  // pcie_tx, 4 fabric directions, pcie_rx
  double flow_s = 0.0;
  {
    sim::Simulation sim;
    FlowNetwork net(sim, c);
    Recorder rec(sim);
    net.send(0, 16, sim::Bytes{bytes}, rec, 0);
    sim.run();
    flow_s = rec.times[0];
  }
  sim::Simulation sim;
  PacketNetwork net(sim, c);
  Recorder rec(sim);
  net.send(0, 16, sim::Bytes{bytes}, rec, 0);
  sim.run();
  const double packet_s = rec.times[0];
  std::printf("uncongested 4 MiB: flow %.3f us, packet %.3f us (%+.3f%%)\n", flow_s * 1e6, packet_s * 1e6,
              100.0 * (packet_s / flow_s - 1.0));
  EXPECT_NEAR(packet_s, flow_s, 0.02 * flow_s);
  EXPECT_GE(packet_s, flow_s);  // store and forward adds one packet per hop
  const PacketStats s = net.packet_stats();
  EXPECT_EQ(s.packets_sent, 1024U);
  EXPECT_EQ(s.packets_delivered, 1024U);
  EXPECT_EQ(s.dropped_packets, 0U);
  EXPECT_EQ(s.pfc_pause_frames, 0U);
  EXPECT_NEAR(net.link_stats(path[1]).bytes, 1024.0 * 4312.0, 1.0);
}

TEST(Packet, IntraNodeAndPipelinedTransfersComplete) {
  const Cluster c(one_leaf());
  sim::Simulation sim;
  PacketNetwork net(sim, c);
  Recorder rec(sim);
  net.send(0, 1, sim::Bytes{kMiB}, rec, 0);  // NVLink
  net.send(2, 2, sim::Bytes{kMiB}, rec, 1);  // self: zero delay
  const std::vector<Leg> ring = {{0, 8}, {8, 16}, {16, 0}};
  net.send_pipelined(ring, sim::Bytes{kMiB}, sim::Duration::us(20), testing::kNoCap, rec, 2);
  sim.run();
  EXPECT_EQ(rec.count, 3);
  const double nvlink = c.node().nvlink_latency.seconds() + packet_wire_s(net, kMiB, 450e9 * 8);
  EXPECT_NEAR(rec.times[0], nvlink, 0.02 * nvlink);
  EXPECT_EQ(rec.times[1], 0.0);
  // Three independent legs at 400 Gb/s, then fixed_latency - the longest leg latency.
  const double legs = packet_wire_s(net, kMiB, 400e9) + 20e-6;
  EXPECT_NEAR(rec.times[2], legs, 0.02 * legs);
}

TEST(Packet, IncastWithPfcIsLosslessAndRunsAtLineRate) {
  const int64_t size = 4 * kMiB;
  const IncastResult r = incast(pfc_only(4 * kMiB), size);
  const Cluster c(one_leaf());
  sim::Simulation probe_sim;
  const PacketNetwork probe(probe_sim, c);
  const double ideal = 8.0 * packet_wire_s(probe, size, 400e9);
  std::printf(
      "incast PFC: completion %.1f us (ideal %.1f), pauses %llu, resumes %llu, paused %.1f us, "
      "max queue %lld B, events %llu\n",
      r.completion_s * 1e6, ideal * 1e6, static_cast<unsigned long long>(r.stats.pfc_pause_frames),
      static_cast<unsigned long long>(r.stats.pfc_resume_frames), r.stats.pfc_paused_time_s * 1e6,
      static_cast<long long>(r.stats.max_queue_bytes), static_cast<unsigned long long>(r.events));
  EXPECT_EQ(r.delivered, 8);
  EXPECT_EQ(r.stats.dropped_packets, 0U);
  EXPECT_EQ(r.stats.lossless_overflow_packets, 0U);
  EXPECT_GT(r.stats.pfc_pause_frames, 0U);
  EXPECT_GT(r.stats.pfc_paused_time_s, 0.0);
  EXPECT_NEAR(r.completion_s, ideal, 0.03 * ideal);
  EXPECT_LE(r.stats.max_queue_bytes, 4 * kMiB);
  // The senders' NIC ports received the pauses the leaf sent on its ingress ports.
  const PortPacketStats* nic1 = port(r.stats, "node1.nic0->leaf0");
  ASSERT_NE(nic1, nullptr);
  EXPECT_GT(nic1->pause_frames_received, 0U);
  const PortPacketStats* leaf_to_1 = port(r.stats, "leaf0->node1.nic0");
  ASSERT_NE(leaf_to_1, nullptr);
  EXPECT_EQ(leaf_to_1->pause_frames_sent, nic1->pause_frames_received);
}

TEST(Packet, IncastWithoutPfcDropsAndRetransmits) {
  const int64_t size = 4 * kMiB;
  PacketParams no_pfc = pfc_only(4 * kMiB);
  no_pfc.pfc.enabled = false;
  const IncastResult lossless_off = incast(no_pfc, size);
  std::printf("incast without PFC (4 MiB buffer): drops %llu, retransmitted %llu\n",
              static_cast<unsigned long long>(lossless_off.stats.dropped_packets),
              static_cast<unsigned long long>(lossless_off.stats.retransmitted_packets));
  EXPECT_GT(lossless_off.stats.dropped_packets, 0U);
  EXPECT_EQ(lossless_off.stats.retransmitted_packets, lossless_off.stats.dropped_packets);
  EXPECT_EQ(lossless_off.stats.pfc_pause_frames, 0U);
  EXPECT_EQ(lossless_off.delivered, 8);

  // Lossy priority with a small buffer: PFC does not apply to it.
  const IncastResult lossy = incast(pfc_only(512 * 1024), size, 8, 1, kLossyPriority);
  EXPECT_GT(lossy.stats.dropped_packets, 0U);
  EXPECT_EQ(lossy.stats.pfc_pause_frames, 0U);
  EXPECT_EQ(lossy.delivered, 8);
  EXPECT_LE(lossy.stats.max_queue_bytes, 512 * 1024);
}

TEST(Packet, EcnAndDcqcnMarkAndPauseLessThanPfcAlone) {
  const int64_t size = 16 * kMiB;
  const IncastResult pfc = incast(pfc_only(), size);
  PacketParams dcqcn;  // ECN 100 KB / 400 KB / 0.2, DCQCN (hpcc-ns3), PFC as pfc_only()
  dcqcn.pfc.xoff_bytes = 217'942;
  dcqcn.dcqcn = dcqcn_profile("hpcc-ns3", 400e9);
  const IncastResult cc = incast(dcqcn, size);
  std::printf(
      "incast 8 x 16 MiB: PFC alone %llu pauses, %.1f us; ECN+DCQCN %llu pauses, marked %.4f, "
      "CNPs %llu, %.1f us\n",
      static_cast<unsigned long long>(pfc.stats.pfc_pause_frames), pfc.completion_s * 1e6,
      static_cast<unsigned long long>(cc.stats.pfc_pause_frames), cc.stats.ecn_marked_fraction,
      static_cast<unsigned long long>(cc.stats.cnps), cc.completion_s * 1e6);
  EXPECT_EQ(pfc.stats.ecn_marked_fraction, 0.0);
  EXPECT_GT(cc.stats.ecn_marked_fraction, 0.0);
  EXPECT_GT(cc.stats.cnps, 0U);
  EXPECT_LT(cc.stats.pfc_pause_frames, pfc.stats.pfc_pause_frames);
  EXPECT_EQ(cc.stats.dropped_packets, 0U);
  EXPECT_EQ(cc.delivered, 8);
}

TEST(Packet, PauseStormSpreadsUpstreamAndTheWatchdogCatchesIt) {
  const Cluster c(one_leaf());
  sim::Simulation sim;
  PacketParams pp = pfc_only();  // watchdog: default 200 ms
  PacketNetwork net(sim, c, {}, pp);
  Recorder rec(sim);
  for (int i = 1; i <= 4; ++i) net.send(8 * i, 0, sim::Bytes{8 * kMiB}, rec, static_cast<uint64_t>(i));
  const sim::Time storm_at = sim::Time::zero() + sim::Duration::us(20);
  net.inject_pause_storm(0, storm_at);
  sim.run_until(sim::Time::zero() + sim::Duration::ms(100));
  {
    const PacketStats s = net.packet_stats();
    EXPECT_EQ(rec.count, 0);  // everything behind the stormed port is stuck
    EXPECT_TRUE(s.pfc_storms.empty());
    // The leaf paused the senders: pauses sent on its other ingress ports.
    for (int i = 1; i <= 4; ++i) {
      const PortPacketStats* p = port(s, "leaf0->node" + std::to_string(i) + ".nic0");
      ASSERT_NE(p, nullptr);
      EXPECT_GT(p->pause_frames_sent, 0U) << i;
    }
    const PortPacketStats* victim = port(s, "leaf0->node0.nic0");
    ASSERT_NE(victim, nullptr);
    EXPECT_EQ(victim->pause_frames_received, 1U);
  }
  sim.run();
  const PacketStats s = net.packet_stats();
  ASSERT_GE(s.pfc_storms.size(), 1U);
  const PfcStorm& storm = s.pfc_storms.front();
  EXPECT_EQ(storm.port, "leaf0->node0.nic0");
  const auto d = *c.topology().find_link("leaf0", "node0.nic0");
  const double start = storm_at.seconds() + c.topology().latency(topology::Topology::reverse(d)).seconds();
  EXPECT_NEAR(storm.start_s, start, 1e-12);
  EXPECT_NEAR(storm.detected_s, start + 0.2, 1e-12);
  std::printf("storm: %s start %.6f s detected %.6f s; %zu storms, %llu pauses\n", storm.port.c_str(),
              storm.start_s, storm.detected_s, s.pfc_storms.size(),
              static_cast<unsigned long long>(s.pfc_pause_frames));
  EXPECT_EQ(rec.count, 4);  // the watchdog ignores the storm: traffic drains
  EXPECT_GT(*std::min_element(rec.times.begin() + 1, rec.times.end()), storm.detected_s);
  EXPECT_EQ(s.dropped_packets, 0U);
  const PortPacketStats* victim = port(s, "leaf0->node0.nic0");
  ASSERT_NE(victim, nullptr);
  EXPECT_NEAR(victim->paused_time_s, 0.2, 1e-9);
  EXPECT_GE(s.pfc_paused_time_s, 4 * 0.2);  // the four senders waited as long
}

TEST(Packet, PauseStormCascadesAcrossTheSpine) {
  // Radix 4, 2 tiers: node 2 (leaf1) sends to node 0 (leaf0) through a spine. One flow at
  // line rate pauses nothing; the storm at node 0 backs up leaf0, then the spine, then leaf1,
  // then node 2's NIC.
  const Cluster c(small_cluster(4, 1, 4, 2));
  sim::Simulation sim;
  PacketParams pp = pfc_only();
  pp.pfc.watchdog = sim::Duration::ms(1);
  PacketNetwork net(sim, c, {}, pp);
  Recorder rec(sim);
  net.send(16, 0, sim::Bytes{8 * kMiB}, rec, 0);
  const sim::Time storm_at = sim::Time::zero() + sim::Duration::us(50);
  net.inject_pause_storm(0, storm_at);
  sim.run_until(storm_at - sim::Duration::ps(1));
  EXPECT_EQ(net.packet_stats().pfc_pause_frames, 0U);
  std::vector<int32_t> path;
  c.path(16, 0, 0, path);
  ASSERT_EQ(path.size(), 6U);
  sim.run();
  const PacketStats s = net.packet_stats();
  // path[1..4]: node2->leaf1, leaf1->spine, spine->leaf0, leaf0->node0. Every egress on the
  // way was paused by the next hop.
  for (size_t h = 1; h <= 4; ++h) {
    const PortPacketStats* p = port(s, c.resource_name(path[h]));
    ASSERT_NE(p, nullptr);
    EXPECT_GE(p->pause_frames_received, 1U) << p->name;
    EXPECT_GT(p->paused_time_s, 0.0) << p->name;
  }
  ASSERT_GE(s.pfc_storms.size(), 1U);
  EXPECT_EQ(s.pfc_storms.front().port, c.resource_name(path[4]));
  EXPECT_NEAR(s.pfc_storms.front().detected_s - s.pfc_storms.front().start_s, 1e-3, 1e-12);
  EXPECT_EQ(rec.count, 1);
}

TEST(Packet, SameSeedSameCounters) {
  PacketParams pp;
  pp.ecn.kmin_bytes = 20'000;
  pp.ecn.kmax_bytes = 200'000;
  const IncastResult a = incast(pp, 2 * kMiB, 8, 7);
  const IncastResult b = incast(pp, 2 * kMiB, 8, 7);
  EXPECT_GT(a.stats.ecn_marked_packets, 0U);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.completion_s, b.completion_s);
  EXPECT_EQ(a.stats.ecn_marked_packets, b.stats.ecn_marked_packets);
  EXPECT_EQ(a.stats.cnps, b.stats.cnps);
  EXPECT_EQ(a.stats.pfc_pause_frames, b.stats.pfc_pause_frames);
  EXPECT_EQ(a.stats.pfc_paused_time_s, b.stats.pfc_paused_time_s);
  EXPECT_EQ(a.stats.max_queue_bytes, b.stats.max_queue_bytes);
}

TEST(Packet, PermutationThroughput) {
  // 64 single-NIC nodes, radix 16, 2 tiers (8 leaves x 8 spines): a random permutation of
  // 64 flows x 1 MiB. Prints packets/s and events/s (no assertion on wall time).
  const Cluster c(small_cluster(64, 1, 16, 2));
  sim::Simulation sim(3);
  PacketNetwork net(sim, c);
  Recorder rec(sim);
  std::vector<int> dst(64);
  std::iota(dst.begin(), dst.end(), 0);
  sim::Rng rng = sim.rng(99);
  for (;;) {
    for (size_t i = dst.size() - 1; i > 0; --i) std::swap(dst[i], dst[rng.below(i + 1)]);
    bool fixed_point = false;
    for (int i = 0; i < 64; ++i) fixed_point = fixed_point || dst[static_cast<size_t>(i)] == i;
    if (!fixed_point) break;
  }
  for (int i = 0; i < 64; ++i) {
    net.send(8 * i, 8 * dst[static_cast<size_t>(i)], sim::Bytes{kMiB}, rec, static_cast<uint64_t>(i));
  }
  const auto t0 = std::chrono::steady_clock::now();
  sim.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const PacketStats s = net.packet_stats();
  EXPECT_EQ(rec.count, 64);
  EXPECT_EQ(s.packets_delivered, 64U * 256U);
  std::printf(
      "permutation 64 x 1 MiB: sim %.1f us, %llu packets, %llu events, wall %.3f s, "
      "%.3g packets/s, %.3g events/s, pauses %llu, marked %.4f\n",
      sim.now().seconds() * 1e6, static_cast<unsigned long long>(s.packets_sent),
      static_cast<unsigned long long>(sim.events_executed()), wall,
      static_cast<double>(s.packets_sent) / wall, static_cast<double>(sim.events_executed()) / wall,
      static_cast<unsigned long long>(s.pfc_pause_frames), s.ecn_marked_fraction);
}

}  // namespace
}  // namespace ct::network
