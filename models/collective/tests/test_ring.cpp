// Ring all-reduce against the alpha-beta closed form, in both backends, 2..64 nodes:
//   T = 2(n-1) (step_latency + h) + 2(n-1)/n S / min(C x 400 Gb/s x 0.95, 2 C x 20.6 GB/s)
// n = 8 x nodes ranks, C = 8 channels (one per NIC), h = the mean hop latency of a channel:
// per node 7 NVLink hops and one NVLink relay + NIC-to-NIC path, h = nvlink + path / 8; the
// bandwidth the smaller of the NICs' and the ring's 2 C CTAs' (nccl_tuning.h
// kRingNetCtaBusBwHopper).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "models/collective/layout.h"
#include "models/collective/nccl_tuning.h"
#include "models/collective/ring.h"
#include "models/collective/tests/fixtures.h"

namespace ct::collective {
namespace {

using testing::first_gpus;
using testing::run_one;
using testing::small_cluster;

class RingClosedForm : public ::testing::TestWithParam<std::tuple<std::string, int, double>> {};

TEST_P(RingClosedForm, AllReduceMatchesAlphaBeta) {
  const auto& [mode, nodes, bytes] = GetParam();
  const network::Cluster c(small_cluster(nodes));
  sim::Simulation sim;
  const auto net = network::make_network(mode, sim, c);
  const int n = 8 * nodes;
  const double h = c.node().nvlink_latency.seconds() + net->path_latency(0, 8).seconds() / 8;
  const double alpha = 3e-6;
  const double bus = std::min(8 * 400e9 / 8 * 0.95, 16 * kRingNetCtaBusBwHopper * 1e9);
  const double expected = 2.0 * (n - 1) * (alpha + h) + 2.0 * (n - 1) / n * bytes / bus;
  CollectiveParams p;
  p.algorithm = Algorithm::ring;
  p.low_latency_protocols = false;  // the closed form is the Simple protocol's chain
  const double t = run_one(c, mode, Op::all_reduce, first_gpus(n), bytes, p);
  EXPECT_NEAR(t, expected, 0.02 * expected) << mode << " nodes " << nodes << " bytes " << bytes;
  std::printf("[ closed form ] %-10s nodes %3d size %12.0f  sim %12.3f us  closed %12.3f us  err %+.4f%%\n",
              mode.c_str(), nodes, bytes, t * 1e6, expected * 1e6, 100.0 * (t - expected) / expected);
}

INSTANTIATE_TEST_SUITE_P(Collective, RingClosedForm,
                         ::testing::Combine(::testing::Values("analytical", "flow"),
                                            ::testing::Values(2, 4, 8, 16, 32, 64),
                                            ::testing::Values(8.0, 1024.0 * 1024 * 1024)));

TEST(Ring, OneGpuPerNodeRunsAtItsOwnNicRate) {
  // A DP-style group (local 3 of each node): every channel uses the GPU's own NIC, so
  // busbw -> 400 Gb/s x 0.95 = 47.5 GB/s.
  const network::Cluster c(small_cluster(8));
  std::vector<int> group;
  for (int node = 0; node < 8; ++node) group.push_back(node * 8 + 3);
  const double bytes = 8.0 * (1 << 30);
  CollectiveParams p;
  p.algorithm = Algorithm::ring;
  for (const std::string mode : {"analytical", "flow"}) {
    const double t = run_one(c, mode, Op::all_reduce, group, bytes, p);
    const double busbw = bytes / t * bus_factor(Op::all_reduce, 8);
    EXPECT_NEAR(busbw, 47.5e9, 0.01 * 47.5e9) << mode;
  }
}

TEST(Ring, FewerChannelsThanGpusLeaveByEveryNic) {
  // 2 nodes of 8 GPUs and 4 NICs: 4 channels, whose inter-node legs leave from GPUs 0, 2, 4, 6
  // (one per NIC), not 0-3 (NICs 0, 0, 1, 1: half the NICs idle, half the bandwidth).
  const network::Cluster c(small_cluster(2, 4));
  sim::Simulation sim;
  const auto net = network::make_network("analytical", sim, c);
  std::vector<uint8_t> seen;
  const auto group = first_gpus(16);
  const Layout layout = make_layout(c, group, seen);
  // The local GPUs the channels' inter-node legs leave from, sorted.
  auto leaving = [&](int channels) {
    std::vector<network::Leg> legs;
    ring_legs(*net, layout, channels, legs);
    std::vector<int> out;
    for (const auto& leg : legs) {
      if (leg.src_gpu / 8 != leg.dst_gpu / 8) out.push_back(leg.src_gpu % 8);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(leaving(4), (std::vector<int>{0, 0, 2, 2, 4, 4, 6, 6}));
  // As many channels as GPUs: channel c by GPU c.
  EXPECT_EQ(leaving(8), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}));
}

TEST(Ring, IntraNodeRingUsesNvlinkAtNcclsRingBandwidth) {
  // One node: 8 channels of 8 NVLink legs, each GPU's port carries 8 legs: the wire allows a
  // busbw of 450 GB/s x 0.95, but NCCL's ring reaches its search bandwidth, 12 channels x
  // 30 GB/s = 360 (measured 365-370 on H100, docs/collectives.md): the cap.
  const network::Cluster c(small_cluster(1));
  const double bytes = 4.0 * (1 << 30);
  CollectiveParams p;
  p.algorithm = Algorithm::ring;
  for (const std::string mode : {"analytical", "flow"}) {
    const double t = run_one(c, mode, Op::all_reduce, first_gpus(8), bytes, p);
    EXPECT_NEAR(bytes / t * bus_factor(Op::all_reduce, 8), 360e9, 0.005 * 360e9) << mode;
  }
}

TEST(Ring, AllGatherAndReduceScatterTakeHalfTheAllReduceBandwidthTerm) {
  // 16 channels: 32 CTAs leave the all-reduce at the NICs' rate (test_nccl_tests.cpp), as the
  // copies are.
  const network::Cluster c(small_cluster(4));
  const double bytes = 8.0 * (1 << 30);
  CollectiveParams p;
  p.algorithm = Algorithm::ring;
  p.channels = 16;
  const double ar = run_one(c, "flow", Op::all_reduce, first_gpus(32), bytes, p);
  const double ag = run_one(c, "flow", Op::all_gather, first_gpus(32), bytes, p);
  const double rs = run_one(c, "flow", Op::reduce_scatter, first_gpus(32), bytes, p);
  EXPECT_NEAR(ag, ar / 2, 0.01 * ar);
  EXPECT_DOUBLE_EQ(ag, rs);
  const double bc = run_one(c, "flow", Op::broadcast, first_gpus(32), bytes, p);
  EXPECT_NEAR(bytes / bc, 8 * 47.5e9, 0.01 * 8 * 47.5e9);  // broadcast busbw = algbw
}

TEST(Ring, ConcurrentCollectivesContendInFlowModeOnly) {
  // Two all-reduces over the same two nodes share every NIC: twice the time in flow mode (16
  // channels: the rings run at the NICs' rate, not their CTAs').
  const network::Cluster c(small_cluster(2));
  const double bytes = 1.0 * (1 << 30);
  CollectiveParams p;
  p.algorithm = Algorithm::ring;
  p.channels = 16;
  for (const std::string mode : {"analytical", "flow"}) {
    sim::Simulation sim;
    auto net = network::make_network(mode, sim, c);
    CollectiveEngine engine(sim, *net, c, p);
    testing::Done done(sim);
    const auto g = first_gpus(16);
    engine.start(Op::all_reduce, g, sim::Bytes{static_cast<int64_t>(bytes)}, done, 0);
    engine.start(Op::all_reduce, g, sim::Bytes{static_cast<int64_t>(bytes)}, done, 1);
    sim.run();
    const double alone = run_one(c, mode, Op::all_reduce, g, bytes, p);
    EXPECT_NEAR(done.times[1] / alone, mode == "flow" ? 2.0 : 1.0, 0.05) << mode;
  }
}

}  // namespace
}  // namespace ct::collective
