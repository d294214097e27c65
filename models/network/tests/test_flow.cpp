// Max-min behaviour of the flow backend against closed forms.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "models/network/cluster.h"
#include "models/network/flow_network.h"
#include "models/network/tests/fixtures.h"

namespace ct::network {
namespace {

using testing::Recorder;
using testing::small_cluster;
using testing::wire_s;

constexpr double kMiB = 1 << 20;

TEST(Flow, TwoFlowsSharingANicGetHalfEach) {
  const Cluster c(small_cluster(2, 4));  // GPUs 0 and 1 share NIC 0
  sim::Simulation sim;
  FlowNetwork net(sim, c);
  Recorder rec(sim);
  const double bytes = 64 * kMiB;
  net.send(0, 8, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 0);
  net.send(1, 9, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 1);
  sim.run_until(sim::Time::from_ps(1));
  EXPECT_EQ(net.solves(), 1U);  // both arrivals solved once
  EXPECT_EQ(net.active_flows(), 2U);
  sim.run();
  const double expected = net.path_latency(0, 8).seconds() + wire_s(bytes, 200e9);
  EXPECT_NEAR(rec.times[0], expected, 1e-6 * expected);
  EXPECT_NEAR(rec.times[1], expected, 1e-6 * expected);
}

TEST(Flow, DepartureSpeedsUpTheOther) {
  // A (S) and B (2S) share NIC 0 at B/2 each; A ends at 2S/B, then B runs alone at B:
  // B ends at 2S/B + S/B = 3S/B.
  const Cluster c(small_cluster(2, 4));
  sim::Simulation sim;
  FlowNetwork net(sim, c);
  Recorder rec(sim);
  const double s = 32 * kMiB;
  net.send(0, 8, sim::Bytes{static_cast<int64_t>(s)}, rec, 0);
  net.send(1, 9, sim::Bytes{static_cast<int64_t>(2 * s)}, rec, 1);
  sim.run();
  const double lat = net.path_latency(0, 8).seconds();
  const double unit = wire_s(s, 400e9);
  EXPECT_NEAR(rec.times[0], lat + 2 * unit, 1e-6 * unit);
  EXPECT_NEAR(rec.times[1], lat + 3 * unit, 1e-6 * unit);
}

TEST(Flow, LateArrivalSlowsTheFirst) {
  // A (2S) alone for S/B (half done), then B (S) joins: both at B/2. B needs 2S/B, A needs
  // S / (B/2) = 2S/B too: both end at S/B + 2S/B = 3S/B.
  const Cluster c(small_cluster(2, 4));
  sim::Simulation sim;
  FlowNetwork net(sim, c);
  Recorder rec(sim);
  const double s = 16 * kMiB;
  const double unit = wire_s(s, 400e9);
  net.send(0, 8, sim::Bytes{static_cast<int64_t>(2 * s)}, rec, 0);
  class Starter final : public sim::EventHandler {
   public:
    Starter(FlowNetwork& n, Recorder& r, double b) : net(n), rec(r), bytes(b) {}
    void on_event(uint64_t) override { net.send(1, 9, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 1); }
    FlowNetwork& net;
    Recorder& rec;
    double bytes;
  } starter(net, rec, s);
  sim.schedule_in(sim::Duration::from_seconds(unit), starter);
  sim.run();
  const double lat = net.path_latency(0, 8).seconds();
  EXPECT_NEAR(rec.times[0], lat + 3 * unit, 1e-6 * unit);
  EXPECT_NEAR(rec.times[1], lat + 3 * unit, 1e-6 * unit);
}

TEST(Flow, SolveQuantumDelaysOnlyChangesCloseToTheLastSolve) {
  // solve_quantum q = 10 us: solves at least q apart. A send issued at 23 us with nothing
  // solved since 0 starts at once, as with the exact solver (the quantum used to round it up
  // to 30 us).
  const Cluster c(small_cluster(2, 4));
  const double bytes = 4 * kMiB;
  struct Later final : sim::EventHandler {
    FlowNetwork* net = nullptr;
    Recorder* rec = nullptr;
    int64_t bytes = 0;
    void on_event(uint64_t) override { net->send(2, 10, sim::Bytes{bytes}, *rec, 1); }
  };
  const auto run = [&](sim::Duration quantum, bool same_instant) {
    sim::Simulation sim;
    NetworkParams p;
    p.solve_quantum = quantum;
    FlowNetwork net(sim, c, p);
    Recorder rec(sim);
    Later later;
    later.net = &net;
    later.rec = &rec;
    later.bytes = static_cast<int64_t>(bytes);
    net.send(0, 8, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 0);
    if (same_instant) {
      sim.run_until(sim::Time::from_ps(1));                              // the first send's solve, at t = 0
      net.send(2, 10, sim::Bytes{static_cast<int64_t>(bytes)}, rec, 1);  // another NIC: no sharing
    } else {
      sim.schedule_at(sim::Time::from_ps(sim::Duration::us(23).count_ps()), later);
    }
    sim.run();
    return rec.times;
  };
  const sim::Duration q = sim::Duration::us(10);
  const auto exact = run(sim::Duration::zero(), false);
  const auto quantised = run(q, false);
  EXPECT_DOUBLE_EQ(quantised[0], exact[0]);
  EXPECT_DOUBLE_EQ(quantised[1], exact[1]) << "a send 23 us after the last solve starts on time";
  // At the very instant of a solve a change is solved at once too (as the exact solver does).
  const auto exact_now = run(sim::Duration::zero(), true);
  const auto quantised_now = run(q, true);
  EXPECT_DOUBLE_EQ(quantised_now[1], exact_now[1]);
}

TEST(Flow, ChainAndFlowShareByMaxMin) {
  // A chain crossing NIC 0 twice (coefficient 2) and a flow on NIC 0: 2x + y <= B with equal
  // levels gives x = y = B/3.
  const Cluster c(small_cluster(2, 4));
  sim::Simulation sim;
  FlowNetwork net(sim, c);
  Recorder rec(sim);
  const std::array<Leg, 2> legs{Leg{0, 8}, Leg{1, 9}};
  const double s = 16 * kMiB;
  net.send_pipelined(legs, sim::Bytes{static_cast<int64_t>(s)}, sim::Duration::zero(), testing::kNoCap, rec,
                     0);
  net.send(0, 9, sim::Bytes{static_cast<int64_t>(s)}, rec, 1);
  sim.run();
  const double unit = wire_s(s, 400e9 / 3);
  EXPECT_NEAR(rec.times[0], unit, 1e-6 * unit);
  EXPECT_NEAR(rec.times[1], net.path_latency(0, 9).seconds() + unit, 1e-6 * unit);
}

TEST(Flow, CapacityChangeRedatesTransfersInFlight) {
  // Halve the NIC link at half time: the second half takes twice as long: T = 0.5u + 1u.
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  FlowNetwork net(sim, c);
  Recorder rec(sim);
  const double s = 64 * kMiB;
  const double unit = wire_s(s, 400e9);
  net.send(0, 8, sim::Bytes{static_cast<int64_t>(s)}, rec, 0);
  const auto d = c.topology().route(c.nic_of(0), c.nic_of(8), 0).front();  // nic -> leaf
  class Degrader final : public sim::EventHandler {
   public:
    Degrader(FlowNetwork& n, int32_t r) : net(n), link(r) {}
    void on_event(uint64_t) override { net.set_resource_capacity(link, sim::Bandwidth::gbps(200)); }
    FlowNetwork& net;
    int32_t link;
  } degrader(net, d);
  sim.schedule_in(sim::Duration::from_seconds(0.5 * unit), degrader);
  sim.run();
  const double lat = net.path_latency(0, 8).seconds();
  EXPECT_NEAR(rec.times[0], lat + 1.5 * unit, 1e-6 * unit);
  // The degraded direction's utilization over the run: 0.5u at 1/1 plus 1u at 1/1 of 200.
  EXPECT_GT(net.link_stats(d).utilization, 0.95 * (1.5 * unit) / rec.times[0]);
}

// Link statistics are attributed per transfer when it stops moving and before its link changes
// capacity; readings in between count the bits in flight. One flow of S at B on a NIC link,
// halved to B/2 at t = 0.5u (u = S/B): read at 0.25u (in flight), then after the end.
TEST(Flow, LinkStatisticsCountBitsInFlightAndEachCapacityPeriod) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  FlowNetwork net(sim, c);
  Recorder rec(sim);
  const double s = 64 * kMiB;
  const double unit = wire_s(s, 400e9);
  const double wire_bits = 8.0 * s / net.params().protocol_efficiency;
  net.send(0, 8, sim::Bytes{static_cast<int64_t>(s)}, rec, 0);
  const auto d = c.topology().route(c.nic_of(0), c.nic_of(8), 0).front();  // nic -> leaf
  struct At final : sim::EventHandler {
    explicit At(std::function<void()> f) : fn(std::move(f)) {}
    void on_event(uint64_t) override { fn(); }
    std::function<void()> fn;
  };
  LinkStats early;
  At read([&] { early = net.link_stats(d); });
  At degrade([&] { net.set_resource_capacity(d, sim::Bandwidth::gbps(200)); });
  sim.schedule_in(sim::Duration::from_seconds(0.25 * unit), read);
  sim.schedule_in(sim::Duration::from_seconds(0.5 * unit), degrade);
  sim.run();
  EXPECT_NEAR(early.bytes * 8.0, 0.25 * wire_bits, 1e-6 * wire_bits);
  EXPECT_NEAR(early.busy_s, 0.25 * unit, 1e-6 * unit);
  const LinkStats end = net.link_stats(d);
  EXPECT_NEAR(end.bytes * 8.0, wire_bits, 1e-9 * wire_bits);
  EXPECT_NEAR(end.busy_s, 1.5 * unit, 1e-6 * unit);  // busy while the flow moved
  // Full at 400 for 0.5u, then full at 200 for 1u: 1.5u of the run at utilization 1.
  const double now = sim.now().seconds();
  EXPECT_NEAR(end.utilization, 1.5 * unit / now, 1e-6);
  EXPECT_EQ(net.top_links(1).front().resource, d);
  EXPECT_NEAR(net.max_link_utilization(), end.utilization, 1e-12);
}

TEST(Flow, FailedLinkStallsUntilRestored) {
  const Cluster c(small_cluster(2));
  sim::Simulation sim;
  FlowNetwork net(sim, c);
  Recorder rec(sim);
  const auto d = c.topology().route(c.nic_of(0), c.nic_of(8), 0).front();
  net.set_resource_capacity(d, sim::Bandwidth::bits_per_s(0));
  net.send(0, 8, sim::Bytes{1 << 20}, rec, 0);
  sim.run();
  EXPECT_EQ(rec.count, 0);
  EXPECT_EQ(net.active_flows(), 1U);
  net.set_resource_capacity(d, sim::Bandwidth::gbps(400));
  sim.run();
  EXPECT_EQ(rec.count, 1);
}

}  // namespace
}  // namespace ct::network

namespace ct::network {
namespace {

// A named chain (send_chain) keeps what routing its legs gave under its id while the routes
// stay as they are, and routes again after a failure changes them: every call takes the time
// send_pipelined gives it, before and after a spine link on the chain's first leg goes down.
TEST(Flow, NamedChainsKeepTheirRoutesUntilTheRoutesChange) {
  std::vector<std::vector<double>> runs;
  for (const bool named : {false, true}) {
    Cluster c(small_cluster(16, 8, 16));
    std::vector<Leg> ring;
    for (int n = 0; n < 16; ++n) ring.push_back(Leg{n * 8 + 1, (n + 5) % 16 * 8 + 2});
    sim::Simulation sim;
    FlowNetwork net(sim, c);
    Recorder rec(sim);
    const sim::Bytes bytes{int64_t{64} << 20};
    auto send = [&](uint64_t tag) {
      if (named) {
        net.send_chain(7, ring, bytes, sim::Duration::us(3), testing::kNoCap, rec, tag);
      } else {
        net.send_pipelined(ring, bytes, sim::Duration::us(3), testing::kNoCap, rec, tag);
      }
    };
    for (uint64_t tag = 0; tag < 3; ++tag) send(tag);
    net.send(9, 42, bytes, rec, 3);  // a flow beside them
    sim.run();
    // A switch-to-switch link on the first leg's path goes down: the routes are recomputed.
    const topology::Path before = c.topology().route(c.nic_of(1), c.nic_of(42), chain_leg_flow(0));
    ASSERT_GE(before.size(), 4U);
    c.topology().set_link_state(before[1], topology::LinkState::down);
    net.set_resource_capacity(before[1], sim::Bandwidth::bits_per_s(0));  // a stale path would stall
    const topology::Path after = c.topology().route(c.nic_of(1), c.nic_of(42), chain_leg_flow(0));
    EXPECT_NE(after, before);
    for (uint64_t tag = 4; tag < 6; ++tag) send(tag);
    sim.run();
    ASSERT_EQ(rec.count, 6);
    runs.push_back(rec.times);
  }
  EXPECT_EQ(runs[1], runs[0]);
}

// Point-to-point sends remember their routes (FlowNetwork::send_flow's direct-mapped table):
// 128 x 43 connections through the table, twice, with a switch link gone between the rounds,
// each send alone in the network; every time equals a fresh network's, in which nothing is
// remembered. The failure moves some connections to other paths (the second round must route
// them again: a stale path would run over the dead link, capacity 0, and never arrive).
TEST(Flow, RememberedSendRoutesFollowRouteChanges) {
  std::vector<std::array<int, 3>> sends;  // src, dst, flow id
  for (int s = 0; s < 128; ++s) {
    for (int d = 0; d < 128; d += 3) {
      if (s != d) sends.push_back({s, d, (s * 7 + d) % 5});
    }
  }
  auto times = [&](bool one_network) {
    Cluster c(small_cluster(16, 8, 16));
    const topology::Path cut = c.topology().route(c.nic_of(1), c.nic_of(42), 0);
    std::vector<double> out;
    sim::Simulation sim;
    FlowNetwork shared(sim, c);
    for (int round = 0; round < 2; ++round) {
      if (round == 1) {
        c.topology().set_link_state(cut[1], topology::LinkState::down);
        shared.set_resource_capacity(cut[1], sim::Bandwidth::bits_per_s(0));
      }
      for (const auto& [s, d, f] : sends) {
        sim::Simulation own_sim;
        std::unique_ptr<FlowNetwork> own = one_network ? nullptr : std::make_unique<FlowNetwork>(own_sim, c);
        if (own && round == 1) own->set_resource_capacity(cut[1], sim::Bandwidth::bits_per_s(0));
        FlowNetwork& net = own ? *own : shared;
        sim::Simulation& at = own ? own_sim : sim;
        Recorder rec(at);
        const double start = at.now().seconds();
        net.send_flow(s, d, static_cast<uint64_t>(f), sim::Bytes{int64_t{1} << 20}, rec, 0);
        at.run();
        out.push_back(rec.count == 1 ? rec.times.at(0) - start : -1.0);
      }
    }
    return out;
  };
  const std::vector<double> fresh = times(false), kept = times(true);
  ASSERT_EQ(kept.size(), fresh.size());
  size_t differ = 0, lost = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    differ += std::abs(kept[i] - fresh[i]) > 1e-12 ? 1 : 0;
    lost += kept[i] < 0 ? 1 : 0;
  }
  EXPECT_EQ(differ, 0U);
  EXPECT_EQ(lost, 0U);
}

}  // namespace
}  // namespace ct::network
