#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "models/collective/tests/fixtures.h"

namespace ct::collective {
namespace {

using testing::Done;
using testing::first_gpus;
using testing::run_one;
using testing::small_cluster;

TEST(Collective, SmallMessagesRunNcclsLowLatencyProtocol) {
  // 8 B all-reduce over 2 full nodes (16 ranks). NCCL runs it with LL (flags in every 8 B, no
  // per-step handshake through the proxy), so the time is NCCL's LL latency of the algorithm,
  // not 2(n-1) Simple steps:
  //   ring: base + (nsteps - inter) max(NVLink LL, net overhead) + inter x NET LL, 30 steps
  //   tree: base + 2 ((ppn - 1) NVLink + log2(nodes) NET), LL constants
  // (nccl_tuning.h), or the hops' own latency where that is more. The bandwidth term (8 B at
  // LL's rate) is ~ns.
  const network::Cluster c(small_cluster(2));
  sim::Simulation sim;
  const auto net = network::make_network("analytical", sim, c);
  CollectiveEngine engine(sim, *net, c);
  TuningInput in;
  in.ranks = 16;
  in.nodes = 2;
  in.ppn = 8;
  in.channels = c.node().nics_per_node;
  in.bw_inter = ladder_inter(
      std::min(c.node().nic_rate.bytes_per_second(), c.node().pcie_rate.bytes_per_second()) / 1e9,
      c.node().gpu.sm_arch);
  in.nvlink = nccl_nvlink_total(c.node().nvlink_rate.bytes_per_second());
  in.sm_arch = c.node().gpu.sm_arch;
  CollectiveParams ring;
  ring.algorithm = Algorithm::ring;
  CollectiveParams tree;
  tree.algorithm = Algorithm::tree;
  // Never below the hops' own latency: 30 ring steps of the mean hop (NVLink + NIC path / 8),
  // 16 tree steps of the NIC path.
  const double path = net->path_latency(0, 8).seconds();
  const double hop = c.node().nvlink_latency.seconds() + path / 8;
  const double ring_lat =
      std::max(1e-6 * nccl_cost(in, NcclAlgo::ring, Protocol::ll, 8).latency_us, 30 * hop);
  const double tree_lat =
      std::max(1e-6 * nccl_cost(in, NcclAlgo::tree, Protocol::ll, 8).latency_us, 16 * path);
  std::printf(
      "8 B over 2 nodes: ring LL %.2f us (NCCL %.2f, wire %.2f), tree LL %.2f us (NCCL %.2f, wire %.2f)\n",
      1e6 * ring_lat, nccl_cost(in, NcclAlgo::ring, Protocol::ll, 8).latency_us, 3e7 * hop, 1e6 * tree_lat,
      nccl_cost(in, NcclAlgo::tree, Protocol::ll, 8).latency_us, 1.6e7 * path);
  EXPECT_EQ(engine.plan(Op::all_reduce, first_gpus(16), sim::Bytes{8}, Algorithm::ring).protocol,
            Protocol::ll);
  EXPECT_EQ(engine.plan(Op::all_reduce, first_gpus(16), sim::Bytes{8}, Algorithm::tree).protocol,
            Protocol::ll);
  for (const std::string mode : {"analytical", "flow"}) {
    const double tr = run_one(c, mode, Op::all_reduce, first_gpus(16), 8, ring);
    EXPECT_NEAR(tr, ring_lat, 1e-3 * tr) << mode;
    const double tt = run_one(c, mode, Op::all_reduce, first_gpus(16), 8, tree);
    EXPECT_NEAR(tt, tree_lat, 1e-3 * tt) << mode;
    EXPECT_DOUBLE_EQ(run_one(c, mode, Op::all_reduce, first_gpus(16), 8), tt) << "automatic picks the tree";
  }
  EXPECT_LT(tree_lat, ring_lat);
  // Large buffers stay on Simple, whose chain carries the step latencies and the wire model.
  const Plan big = engine.plan(Op::all_reduce, first_gpus(16), sim::Bytes{int64_t{1} << 30}, Algorithm::ring);
  EXPECT_EQ(big.protocol, Protocol::simple);
  // In between, LL128: NCCL's choice at 4 MiB across 2 nodes is the tree with LL128.
  EXPECT_EQ(
      engine.plan(Op::all_reduce, first_gpus(16), sim::Bytes{int64_t{4} << 20}, Algorithm::tree).protocol,
      Protocol::ll128);
}

TEST(Collective, NvlsTreePaysItsPipelineFill) {
  // NVLS tree across 2 nodes: NCCL's latency plus `steps` chunks of NCCL's NVLS-tree chunk at
  // the chain's per-leg rate, so the fill doubles where the chunk doubles (64 MiB) and the
  // nccl-tests curve rises as the real 2-node tables do (README, nccl-tests-sizes).
  const network::Cluster c(small_cluster(2));
  sim::Simulation sim;
  const auto net = network::make_network("analytical", sim, c);
  CollectiveEngine engine(sim, *net, c);
  const auto all = first_gpus(16);
  // Fill = fixed latency - NCCL's NVLS tree latency on 2 nodes (25 + 2 x 20.9 us).
  const auto fill = [&](int64_t bytes) {
    const Plan p = engine.plan(Op::all_reduce, all, sim::Bytes{bytes}, Algorithm::nvls_tree);
    EXPECT_EQ(p.protocol, Protocol::simple);
    return p.fixed_latency.seconds() - 66.8e-6;
  };
  const double below = fill((int64_t{64} << 20) - 4096), at = fill(int64_t{64} << 20);
  EXPECT_NEAR(at / below, 2.0, 1e-6);
  EXPECT_GT(below, 30e-6);
  EXPECT_LT(at, 200e-6);
  // 8 GiB still reaches the model's bandwidth: the fill is a fixed cost.
  const double t = run_one(c, "analytical", Op::all_reduce, all, double(int64_t{8} << 30));
  EXPECT_NEAR(double(int64_t{8} << 30) / t * bus_factor(Op::all_reduce, 16), 455e9, 0.01 * 455e9);
}

TEST(Collective, AutomaticChoiceIsNcclsCostModel) {
  const network::Cluster c(small_cluster(4));
  sim::Simulation sim;
  auto net = network::make_network("analytical", sim, c);
  CollectiveEngine engine(sim, *net, c);
  const auto all = first_gpus(32);
  // Across nodes: the tree (LL) for small buffers, NVLS tree for large ones; inside one node
  // ring (LL) for small buffers and NVLS for large ones; all-gather always ring.
  EXPECT_EQ(engine.choose(Op::all_reduce, all, sim::Bytes{8}), Algorithm::tree);
  EXPECT_EQ(engine.choose(Op::all_reduce, all, sim::Bytes{int64_t{256} << 20}), Algorithm::nvls_tree);
  // At 4 GiB the ring's 384 GB/s beats the NVLS tree's 364 once its latency is paid.
  EXPECT_EQ(engine.choose(Op::all_reduce, all, sim::Bytes{int64_t{4} << 30}), Algorithm::ring);
  EXPECT_EQ(engine.choose(Op::all_reduce, first_gpus(8), sim::Bytes{8}), Algorithm::ring);
  EXPECT_EQ(engine.choose(Op::all_reduce, first_gpus(8), sim::Bytes{int64_t{1} << 30}), Algorithm::nvls);
  EXPECT_EQ(engine.choose(Op::all_gather, all, sim::Bytes{int64_t{1} << 30}), Algorithm::ring);
  // One GPU per node on 2 nodes: one NIC each; NVLS needs two GPUs in a domain and the
  // tree's per-channel cap is below the NIC: ring.
  const std::vector<int> dp{3, 11};
  EXPECT_EQ(engine.choose(Op::all_reduce, dp, sim::Bytes{int64_t{1} << 30}), Algorithm::ring);
  // A100 has no NVLink SHARP.
  auto a100 = small_cluster(4);
  a100.node.gpu = hardware::gpu("A100-80GB");
  const network::Cluster ca(a100);
  sim::Simulation sim2;
  auto net2 = network::make_network("analytical", sim2, ca);
  CollectiveEngine e2(sim2, *net2, ca);
  const Algorithm big = e2.choose(Op::all_reduce, all, sim::Bytes{int64_t{1} << 30});
  EXPECT_TRUE(big == Algorithm::ring || big == Algorithm::tree);
}

TEST(Collective, EstimateMatchesTheAnalyticalBackend) {
  const network::Cluster c(small_cluster(4));
  for (const Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::nvls_tree}) {
    sim::Simulation sim;
    auto net = network::make_network("analytical", sim, c);
    CollectiveParams p;
    p.algorithm = a;
    CollectiveEngine engine(sim, *net, c, p);
    const sim::Bytes b{256 << 20};
    const double est = engine.estimate(Op::all_reduce, first_gpus(32), b, a).seconds();
    EXPECT_NEAR(run_one(c, "analytical", Op::all_reduce, first_gpus(32), b.as_double(), p), est, 1e-9);
  }
}

TEST(Collective, AllToAllInsideANodeUsesNvlink) {
  // 8 GPUs, S per rank: each GPU's NVLink tx carries 7 legs of S/8:
  //   T = step_latency + nvlink_latency + (S/8) / (450 GB/s x 0.95 / 7)
  const network::Cluster c(small_cluster(2));
  const double bytes = 1.0 * (1 << 30);
  sim::Simulation sim;
  auto net = network::make_network("flow", sim, c);
  CollectiveEngine engine(sim, *net, c);
  Done done(sim);
  engine.start(Op::all_to_all, first_gpus(8), sim::Bytes{static_cast<int64_t>(bytes)}, done, 0);
  sim.run();
  const double expected = 3e-6 + 0.7e-6 + bytes / 8 / (450e9 * 0.95 / 7);
  EXPECT_NEAR(done.times[0], expected, 1e-4 * expected);
  EXPECT_NEAR(bytes / done.times[0] * bus_factor(Op::all_to_all, 8), 450e9 * 0.95, 0.01 * 450e9);
  for (const auto& l : net->top_links(16)) {
    EXPECT_NE(l.name.find("nvlink"), std::string::npos) << l.name;
  }
  EXPECT_EQ(net->link_stats(c.pcie_tx(0)).bytes, 0.0);
}

// The same 16-rank all-to-all when the two nodes form one NVLink domain (NVL72-style
// cluster.nvlink_domain): every leg is NVLink, each GPU's port carries its 15 legs of S/16.
TEST(Collective, AllToAllInsideAMultiNodeNvlinkDomainUsesNvlink) {
  auto spec = small_cluster(2);
  spec.node.nvlink_domain = 16;
  const network::Cluster c(spec);
  const double bytes = 1.0 * (1 << 30);
  const double t = run_one(c, "flow", Op::all_to_all, first_gpus(16), bytes);
  EXPECT_NEAR(t, 3e-6 + 0.7e-6 + bytes / 16 / (450e9 * 0.95 / 15), 1e-3 * t);
  const network::Cluster split(small_cluster(2));
  const double across = run_one(split, "flow", Op::all_to_all, first_gpus(16), bytes);
  EXPECT_LT(t, 0.3 * across) << t << " " << across;
}

TEST(Collective, AllToAllAcrossNodesIsNicBound) {
  // 2 nodes x 8 GPUs, S per rank: each GPU sends 8 x S/16 over its own NIC.
  const network::Cluster c(small_cluster(2));
  const double bytes = 1.0 * (1 << 30);
  const double t = run_one(c, "flow", Op::all_to_all, first_gpus(16), bytes);
  EXPECT_NEAR(t, 8 * bytes / 16 / (50e9 * 0.95), 0.01 * t);
}

TEST(Collective, SendRecvIsOneSend) {
  const network::Cluster c(small_cluster(2));
  sim::Simulation sim;
  const auto net = network::make_network("flow", sim, c);
  const double bytes = 64.0 * (1 << 20);
  const double t = run_one(c, "flow", Op::send_recv, {5, 13}, bytes);
  EXPECT_NEAR(t, net->path_latency(5, 13).seconds() + bytes / (50e9 * 0.95), 1e-6 * t);
}

TEST(Collective, OneRankAndZeroBytesCompleteImmediately) {
  const network::Cluster c(small_cluster(2));
  EXPECT_EQ(run_one(c, "flow", Op::all_reduce, {7}, 1 << 20), 0.0);
  EXPECT_EQ(run_one(c, "analytical", Op::all_gather, first_gpus(16), 0), 0.0);
}

void expect_error(const network::Cluster& c, Op op, std::vector<int> group, const std::string& what) {
  sim::Simulation sim;
  auto net = network::make_network("flow", sim, c);
  CollectiveEngine engine(sim, *net, c);
  Done done(sim);
  try {
    engine.start(op, group, sim::Bytes{1024}, done, 0);
    FAIL() << "expected an error mentioning " << what;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
  sim.run();
  EXPECT_EQ(done.count, 0);
}

TEST(Collective, BadGroupsAreErrors) {
  const network::Cluster c(small_cluster(2));
  expect_error(c, Op::all_reduce, {}, "empty");
  expect_error(c, Op::all_reduce, {0, 1, 5, 1}, "rank 1 ");
  expect_error(c, Op::all_reduce, {0, 16}, "rank 16 ");
  expect_error(c, Op::all_to_all, {-2, 3}, "rank -2 ");
  expect_error(c, Op::send_recv, {0, 1, 2}, "send_recv");
  expect_error(c, Op::send_recv, {3, 3}, "rank 3 ");
}

TEST(Collective, OpNames) {
  EXPECT_EQ(parse_op("reduce_scatter"), Op::reduce_scatter);
  EXPECT_EQ(op_name(Op::all_to_all), "all_to_all");
  EXPECT_THROW(parse_op("allreduce"), std::invalid_argument);
  EXPECT_DOUBLE_EQ(bus_factor(Op::all_reduce, 16), 2.0 * 15 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Op::all_gather, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Op::broadcast, 16), 1.0);
}

}  // namespace
}  // namespace ct::collective
