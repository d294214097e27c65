#include <gtest/gtest.h>

#include <string>

#include "models/collective/nccl_tests.h"
#include "models/collective/tests/fixtures.h"

namespace ct::collective {
namespace {

using testing::small_cluster;

TEST(NcclTests, RingAllReduceBusbwApproachesTheNodesNicRate) {
  // 2 nodes x 8 H100, 8 x 400 Gb/s NICs: a ring's busbw tends to C x 50 GB/s x 0.95 =
  // 380 GB/s (8 channels, one per NIC; per GPU that is its own NIC's 47.5 GB/s).
  const network::Cluster c(small_cluster(2));
  NcclTestsOptions o;
  o.nodes = 2;
  o.collective.algorithm = Algorithm::ring;
  o.min_bytes = int64_t{1} << 30;
  for (const std::string mode : {"analytical", "flow"}) {
    o.network_mode = mode;
    const auto rows = run_nccl_tests(c, o);
    ASSERT_EQ(rows.size(), 4U);  // 1, 2, 4, 8 GiB
    EXPECT_NEAR(rows.front().busbw_GBps, 380.0, 0.05 * 380.0) << mode;
    EXPECT_NEAR(rows.back().busbw_GBps, 380.0, 0.01 * 380.0) << mode;
    for (const auto& r : rows) {
      EXPECT_NEAR(r.busbw_GBps, r.algbw_GBps * 2 * 15.0 / 16, 1e-9);
      EXPECT_EQ(r.count, r.size_bytes / 4);
      EXPECT_EQ(r.redop, "sum");
      EXPECT_EQ(r.root, -1);
    }
  }
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
