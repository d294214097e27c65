// NCCL's cost model (nccl_tuning.h) against the values NCCL's own formulas give for an HGX
// H100 with 8 x 400G NICs (worked by hand from tuning.cc 2.30.7; docs/collectives.md), and the
// choices NCCL logs for that system.
#include <gtest/gtest.h>

#include <cmath>

#include "models/collective/nccl_tuning.h"

namespace ct::collective {
namespace {

TuningInput h100(int nodes, bool all_reduce = true) {
  TuningInput in;
  in.all_reduce = all_reduce;
  in.nodes = nodes;
  in.ppn = 8;
  in.ranks = 8 * nodes;
  in.channels = 8;
  in.bw_inter = ladder_inter(50.0, 90);  // 400 Gb/s NIC -> 48 GB/s
  in.nvlink = nccl_nvlink_total(450e9);  // 369 GB/s
  in.sm_arch = 90;
  return in;
}

constexpr double kBig = 16.0 * (1 << 30);

TEST(NcclTuning, LaddersAndNvlinkTotal) {
  EXPECT_DOUBLE_EQ(ladder_inter(50.0, 90), 48.0);
  EXPECT_DOUBLE_EQ(ladder_inter(100.0, 100), 96.0);
  EXPECT_DOUBLE_EQ(ladder_intra(369.0 / 9, 90), 40.0);
  EXPECT_NEAR(nccl_nvlink_total(450e9), 369.0, 1e-9);
}

TEST(NcclTuning, BusBandwidthsOfAnHgxH100) {
  // Single node: NVLS 8 x 40 x 0.85 x 7/8 x 2 = 476; ring 12 x 30 = 360.
  EXPECT_NEAR(nccl_cost(h100(1), NcclAlgo::nvls, Protocol::simple, kBig).busbw, 476.0, 0.5);
  EXPECT_NEAR(nccl_cost(h100(1), NcclAlgo::ring, Protocol::simple, kBig).busbw, 360.0, 1e-9);
  EXPECT_FALSE(nccl_cost(h100(1), NcclAlgo::tree, Protocol::simple, kBig).enabled);
  EXPECT_FALSE(nccl_cost(h100(1), NcclAlgo::nvls_tree, Protocol::simple, kBig).enabled);
  // Two nodes: NVLS tree capped at 57.7 per channel (461.6); ring 8 x 48 = 384; tree
  // min(0.92 x 384, 8 x 41.4) = 331.2 model busBw, algBw half of it.
  EXPECT_NEAR(nccl_cost(h100(2), NcclAlgo::nvls_tree, Protocol::simple, kBig).busbw, 461.6, 1e-6);
  EXPECT_NEAR(nccl_cost(h100(2), NcclAlgo::ring, Protocol::simple, kBig).busbw, 384.0, 1e-9);
  EXPECT_NEAR(nccl_cost(h100(2), NcclAlgo::tree, Protocol::simple, kBig).algbw, 331.2 / 2, 1e-9);
  EXPECT_FALSE(nccl_cost(h100(2), NcclAlgo::nvls, Protocol::simple, kBig).enabled);
  // More nodes: NVLS tree 45.5 per channel (364), the tree 8 x 36 (288).
  for (const int nodes : {4, 8, 64}) {
    EXPECT_NEAR(nccl_cost(h100(nodes), NcclAlgo::nvls_tree, Protocol::simple, kBig).busbw, 364.0, 1e-6)
        << nodes;
    EXPECT_NEAR(nccl_cost(h100(nodes), NcclAlgo::tree, Protocol::simple, kBig).algbw, 144.0, 1e-9) << nodes;
  }
  // Ampere has no NVLS; a Blackwell tree beyond two nodes is capped at 8 x 24 = 192 (the
  // plateau Together AI measured on B200 + 8 x 400G).
  TuningInput a100 = h100(4);
  a100.sm_arch = 80;
  EXPECT_FALSE(nccl_cost(a100, NcclAlgo::nvls_tree, Protocol::simple, kBig).enabled);
  TuningInput b200 = h100(4);
  b200.sm_arch = 100;
  EXPECT_NEAR(2 * nccl_cost(b200, NcclAlgo::tree, Protocol::simple, kBig).algbw, 192.0, 1e-9);
}

TEST(NcclTuning, RingCtasAndTheirBoundAcrossNodes) {
  // connect.cc: twice the search channels, twice again under 16 on Hopper across nodes, at
  // most 32. 8 NICs (8 channels) and 4 NICs (4) both run 16 CTAs across nodes; one node 8.
  EXPECT_EQ(ring_runtime_ctas(h100(4), 8), 16);
  EXPECT_EQ(ring_runtime_ctas(h100(4), 4), 16);
  EXPECT_EQ(ring_runtime_ctas(h100(4), 1), 4);
  EXPECT_EQ(ring_runtime_ctas(h100(4), 16), 32);
  EXPECT_EQ(ring_runtime_ctas(h100(1), 4), 8);
  TuningInput a100 = h100(4);
  a100.sm_arch = 80;
  EXPECT_EQ(ring_runtime_ctas(a100, 4), 8);
  // The bound: 20.6 GB/s a CTA on Hopper all-reduce across nodes; nothing elsewhere.
  EXPECT_DOUBLE_EQ(ring_net_cta_cap(h100(4), 16), 16 * kRingNetCtaBusBwHopper);
  EXPECT_TRUE(std::isinf(ring_net_cta_cap(h100(1), 16)));
  EXPECT_TRUE(std::isinf(ring_net_cta_cap(h100(4, false), 16)));
  EXPECT_TRUE(std::isinf(ring_net_cta_cap(a100, 16)));
  TuningInput b200 = h100(4);
  b200.sm_arch = 100;
  EXPECT_TRUE(std::isinf(ring_net_cta_cap(b200, 16)));
}

TEST(NcclTuning, LatencyFormulas) {
  // Worked values of NCCL's latency model (us): ring LL on one node 6.6 + 14 x 0.6; ring
  // Simple on 2 nodes 8.4 + 28 x 3.4 + 2 x 14 (x 1.4 plateau for big buffers); tree Simple
  // on 2 nodes 8.4 + 2 (7 x 4 + 14); NVLS tree on 2 nodes 25 + 2 x 20.9.
  EXPECT_NEAR(nccl_cost(h100(1), NcclAlgo::ring, Protocol::ll, 8).latency_us, 15.0, 1e-9);
  EXPECT_NEAR(nccl_cost(h100(2), NcclAlgo::ring, Protocol::simple, 8).latency_us, 131.6, 1e-9);
  EXPECT_NEAR(nccl_cost(h100(2), NcclAlgo::ring, Protocol::simple, kBig).latency_us, 131.6 * 1.4, 1e-9);
  EXPECT_NEAR(nccl_cost(h100(2), NcclAlgo::tree, Protocol::simple, 8).latency_us, 92.4, 1e-9);
  EXPECT_NEAR(nccl_cost(h100(2), NcclAlgo::nvls_tree, Protocol::simple, 8).latency_us, 66.8, 1e-9);
}

TEST(NcclTuning, ChunkSizesFollowCalcCollChunking) {
  // NVLS tree on Hopper: 16 channels x 8 heads = 128 concurrent ops; 128 KiB on 2 nodes from
  // 4 x 128 x 128 KiB = 64 MiB up, 64 KiB below, 32 KiB below 128 x 64 KiB = 8 MiB; from 4
  // nodes the tree's maximum is 64 KiB.
  const double mib = 1 << 20;
  EXPECT_DOUBLE_EQ(nvls_tree_chunk_bytes(h100(2), 64 * mib), 131072.0);
  EXPECT_DOUBLE_EQ(nvls_tree_chunk_bytes(h100(2), 64 * mib - 1), 65536.0);
  EXPECT_DOUBLE_EQ(nvls_tree_chunk_bytes(h100(2), 8 * mib), 65536.0);
  EXPECT_DOUBLE_EQ(nvls_tree_chunk_bytes(h100(2), 8 * mib - 1), 32768.0);
  EXPECT_DOUBLE_EQ(nvls_tree_chunk_bytes(h100(4), kBig), 65536.0);
  EXPECT_DOUBLE_EQ(nvls_tree_chunk_bytes(h100(4), 4 * mib), 32768.0);
  // Tree LL128 on 8 nodes at 8 MiB: steps 1 + 3 + 0.8 = 4.8, 16 channels, 512 KiB each:
  // 576,000 -> 288,000 -> 144,000 -> 72,000 (first loop stops at <= 128 KiB), then
  // 512 KiB / 72,000 = 7 < 9.6 -> 36,000, and 14 >= 9.6 stops.
  EXPECT_DOUBLE_EQ(tree_chunk_bytes(h100(8), 8 * mib, Protocol::ll128), 36000.0);
  EXPECT_DOUBLE_EQ(tree_chunk_bytes(h100(8), kBig, Protocol::ll128), 576000.0);
  EXPECT_DOUBLE_EQ(tree_chunk_bytes(h100(8), 8 * mib, Protocol::ll), 32768.0);
  EXPECT_DOUBLE_EQ(tree_chunk_bytes(h100(8), 8 * mib, Protocol::simple), 524288.0);
}

TEST(NcclTuning, ChoicesMatchWhatNcclLogs) {
  // One node: ring LL for tiny buffers, NVLS for large ones.
  EXPECT_EQ(nccl_choose(h100(1), 1024).algo, NcclAlgo::ring);
  EXPECT_EQ(nccl_choose(h100(1), 1024).proto, Protocol::ll);
  EXPECT_EQ(nccl_choose(h100(1), kBig).algo, NcclAlgo::nvls);
  // Across nodes: tree LL for small buffers, NVLS tree for large ones (NVIDIA/nccl#1752 logs
  // TREE/LL128 at 16 MiB and NVLS_TREE/SIMPLE at 32 MiB on 64 H200).
  EXPECT_EQ(nccl_choose(h100(8), 4096).algo, NcclAlgo::tree);
  EXPECT_EQ(nccl_choose(h100(8), 4096).proto, Protocol::ll);
  EXPECT_EQ(nccl_choose(h100(8), 32.0 * (1 << 20)).algo, NcclAlgo::nvls_tree);
  EXPECT_EQ(nccl_choose(h100(2), kBig).algo, NcclAlgo::nvls_tree);
  // Forced algorithms, and a forced one that cannot run falls back to ring.
  const NcclAlgo ring = NcclAlgo::ring, tree = NcclAlgo::tree;
  EXPECT_EQ(nccl_choose(h100(8), kBig, &ring).algo, NcclAlgo::ring);
  EXPECT_EQ(nccl_choose(h100(1), kBig, &tree).algo, NcclAlgo::ring);
  // All-gather and reduce-scatter run ring.
  EXPECT_EQ(nccl_choose(h100(8, false), kBig).algo, NcclAlgo::ring);
}

}  // namespace
}  // namespace ct::collective
