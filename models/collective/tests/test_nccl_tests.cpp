#include <gtest/gtest.h>

#include <string>

#include "models/collective/nccl_tests.h"
#include "models/collective/nccl_tuning.h"
#include "models/collective/tests/fixtures.h"

namespace ct::collective {
namespace {

using testing::small_cluster;

TEST(NcclTests, RingAllReduceBusbwIsBoundByItsCtasThenByTheNics) {
  // 2 nodes x 8 H100, 8 x 400 Gb/s NICs. NCCL's default 8 channels run 16 CTAs, and across nodes
  // a Simple ring moves kRingNetCtaBusBwHopper a CTA: 16 x 20.6 = 329.6 GB/s busbw, under the
  // NICs' C x 50 GB/s x 0.95 = 380. With 16 channels (32 CTAs, NCCL_MIN_NCHANNELS=32) the CTAs
  // allow 659 GB/s and the ring tends to the NICs' 380 (per GPU its own NIC's 47.5 GB/s).
  const network::Cluster c(small_cluster(2));
  for (const int channels : {0, 16}) {
    const double expected = channels == 0 ? 16 * kRingNetCtaBusBwHopper : 380.0;
    NcclTestsOptions o;
    o.nodes = 2;
    o.collective.algorithm = Algorithm::ring;
    o.collective.channels = channels;
    o.min_bytes = int64_t{1} << 30;
    for (const std::string mode : {"analytical", "flow"}) {
      o.network_mode = mode;
      const auto rows = run_nccl_tests(c, o);
      ASSERT_EQ(rows.size(), 4U);  // 1, 2, 4, 8 GiB
      EXPECT_NEAR(rows.front().busbw_GBps, expected, 0.05 * expected) << mode << " channels " << channels;
      EXPECT_NEAR(rows.back().busbw_GBps, expected, 0.01 * expected) << mode << " channels " << channels;
      for (const auto& r : rows) {
        EXPECT_NEAR(r.busbw_GBps, r.algbw_GBps * 2 * 15.0 / 16, 1e-9);
        EXPECT_EQ(r.count, r.size_bytes / 4);
        EXPECT_EQ(r.redop, "sum");
        EXPECT_EQ(r.root, -1);
      }
    }
  }
}

TEST(NcclTests, TheCtaBoundLeavesNcclsChoiceAndTheCopiesAlone) {
  // NCCL's tuner prices the ring at its NICs and knows nothing of the CTA bound: at 8 GiB on 4
  // nodes it still picks the ring, which then runs at the CTAs' 329.6 GB/s (nccl-tests #309's
  // 320-331 on 4 and 8 nodes). all_gather copies, it does not reduce: not bound (not measured).
  const network::Cluster c(small_cluster(4));
  NcclTestsOptions o;
  o.nodes = 4;
  o.network_mode = "analytical";
  o.min_bytes = o.max_bytes = int64_t{8} << 30;
  const auto automatic = run_nccl_tests(c, o);
  o.collective.algorithm = Algorithm::ring;
  const auto ring = run_nccl_tests(c, o);
  ASSERT_EQ(automatic.size(), 1U);
  EXPECT_DOUBLE_EQ(automatic.front().busbw_GBps, ring.front().busbw_GBps);
  EXPECT_NEAR(ring.front().busbw_GBps, 16 * kRingNetCtaBusBwHopper, 0.01 * 16 * kRingNetCtaBusBwHopper);
  o.op = Op::all_gather;
  EXPECT_NEAR(run_nccl_tests(c, o).front().busbw_GBps, 380.0, 0.01 * 380.0);
  // Four NICs a node: the 4 channels leave by GPUs 0, 2, 4, 6, one per NIC (they took GPUs
  // 0-3, two NICs, and ran at 94.9 GB/s), and NCCL's 4 search channels run 16 CTAs too (doubled
  // twice), whose 329.6 GB/s pass the NICs' 4 x 47.5 = 190: the NICs bound the ring.
  const network::Cluster four(small_cluster(4, 4));
  o.op = Op::all_reduce;
  EXPECT_NEAR(run_nccl_tests(four, o).front().busbw_GBps, 190.0, 0.01 * 190.0);
}

TEST(NcclTests, CtasSetTheRingsBoundAcrossNodes) {
  // network.ctas (NCCL_MIN_CTAS = NCCL_MAX_CTAS): 8 CTAs 8 x 20.6 = 164.8 GB/s, 24 the NICs'
  // 380 (24 x 20.6 = 494 passes them), on 4 nodes at 8 GiB; the chains stay one per NIC.
  const network::Cluster c(small_cluster(4));
  NcclTestsOptions o;
  o.nodes = 4;
  o.network_mode = "analytical";
  o.collective.algorithm = Algorithm::ring;
  o.min_bytes = o.max_bytes = int64_t{8} << 30;
  o.collective.ctas = 8;
  EXPECT_NEAR(run_nccl_tests(c, o).front().busbw_GBps, 8 * kRingNetCtaBusBwHopper,
              0.01 * 8 * kRingNetCtaBusBwHopper);
  o.collective.ctas = 24;
  EXPECT_NEAR(run_nccl_tests(c, o).front().busbw_GBps, 380.0, 0.01 * 380.0);
  o.collective.ctas = -1;
  EXPECT_THROW(run_nccl_tests(c, o), std::invalid_argument);
}

TEST(NcclTests, TableLayoutAndSizes) {
  const network::Cluster c(small_cluster(2));
  NcclTestsOptions o;
  o.network_mode = "analytical";
  o.op = Op::all_gather;
  const auto rows = run_nccl_tests(c, o);
  ASSERT_EQ(rows.size(), 31U);  // 8 B .. 8 GiB
  EXPECT_EQ(rows.front().size_bytes, 8);
  EXPECT_EQ(rows.back().size_bytes, int64_t{8} << 30);
  EXPECT_EQ(rows.front().redop, "none");
  const std::string table = format_nccl_tests(rows, o, 16);
  EXPECT_NE(
      table.find("#       size         count      type   redop    root     time   algbw   busbw #wrong"),
      std::string::npos)
      << table;
  EXPECT_NE(table.find("# Avg bus bandwidth    : "), std::string::npos);
  EXPECT_NE(table.find("           8             2     float    none      -1"), std::string::npos) << table;
}

TEST(NcclTests, BadOptionsAreErrors) {
  const network::Cluster c(small_cluster(2));
  NcclTestsOptions o;
  o.nodes = 3;
  EXPECT_THROW(run_nccl_tests(c, o), std::invalid_argument);
  o.nodes = 2;
  o.network_mode = "fluid";
  EXPECT_THROW(run_nccl_tests(c, o), std::invalid_argument);
}

}  // namespace
}  // namespace ct::collective
