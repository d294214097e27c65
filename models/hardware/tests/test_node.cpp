#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "models/hardware/node.h"

namespace ct::hardware {
namespace {

NodeSpec dgx_h100() {
  using namespace ct::sim::literals;
  NodeSpec n;
  n.gpu = gpu("H100-SXM");
  n.gpus_per_node = 8;
  n.nics_per_node = 8;
  n.nic_rate = 400_Gbps;
  n.nvlink_rate = ct::sim::Bandwidth::bytes_per_s(450e9);
  n.nvlink_latency = 1_us;
  n.pcie_rate = ct::sim::Bandwidth::bytes_per_s(64e9);
  return n;
}

std::string error_of(const NodeSpec& n) {
  try {
    n.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(NodeSpec, ValidNodes) {
  EXPECT_NO_THROW(dgx_h100().validate());
  NodeSpec shared = dgx_h100();
  shared.nics_per_node = 4;  // one NIC per two GPUs
  EXPECT_NO_THROW(shared.validate());
}

TEST(NodeSpec, RejectsBadFieldsByName) {
  NodeSpec n = dgx_h100();
  n.nics_per_node = 3;
  EXPECT_NE(error_of(n).find("nics_per_node"), std::string::npos);
  n.nics_per_node = 16;
  EXPECT_NE(error_of(n).find("nics_per_node"), std::string::npos);
  n = dgx_h100();
  n.gpus_per_node = 0;
  EXPECT_NE(error_of(n).find("gpus_per_node"), std::string::npos);
  n = dgx_h100();
  n.nic_rate = ct::sim::Bandwidth();
  EXPECT_NE(error_of(n).find("nic_rate"), std::string::npos);
  n = dgx_h100();
  n.pcie_rate = ct::sim::Bandwidth();
  EXPECT_NE(error_of(n).find("pcie_rate"), std::string::npos);
  n = dgx_h100();
  n.nvlink_latency = ct::sim::Duration::ns(-1);
  EXPECT_NE(error_of(n).find("nvlink_latency"), std::string::npos);
  n = dgx_h100();
  n.nvlink_domain = 12;  // not whole nodes
  EXPECT_NE(error_of(n).find("nvlink_domain"), std::string::npos);
  n.nvlink_domain = 72;  // 9 nodes of 8
  EXPECT_EQ(error_of(n), "");
  EXPECT_EQ(n.nvlink_domain_gpus(), 72);
  n.nvlink_domain = 0;
  EXPECT_EQ(n.nvlink_domain_gpus(), 8);
  n = dgx_h100();
  n.gpu.tdp_watts = 0;
  EXPECT_NE(error_of(n).find("tdp_watts"), std::string::npos);
}

}  // namespace
}  // namespace ct::hardware
