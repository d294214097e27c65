#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/hardware/gpu_catalog.h"

namespace ct::hardware {
namespace {

TEST(GpuCatalog, HasTheRequiredGpusAndAllAreValid) {
  const auto names = gpu_names();
  for (const char* n :
       {"A100-40GB", "A100-80GB", "H100-SXM", "H800", "H200-SXM", "B200", "B300", "GB200", "GB300"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    ASSERT_NE(find_gpu(n), nullptr) << n;
    EXPECT_NO_THROW(validate(*find_gpu(n))) << n;
  }
  EXPECT_EQ(find_gpu("H100"), nullptr);
}

TEST(GpuCatalog, DatasheetFigures) {
  const GpuSpec& h100 = gpu("H100-SXM");
  EXPECT_DOUBLE_EQ(h100.bf16_dense_flops, 989.4e12);
  EXPECT_DOUBLE_EQ(h100.fp8_dense_flops, 1979e12);
  EXPECT_DOUBLE_EQ(h100.hbm_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.nvlink_bytes_per_s, 450e9);
  EXPECT_EQ(h100.sm_count, 132);
  EXPECT_DOUBLE_EQ(h100.tdp_watts, 700.0);

  const GpuSpec& h800 = gpu("H800");
  EXPECT_DOUBLE_EQ(h800.nvlink_bytes_per_s, 200e9);
  EXPECT_DOUBLE_EQ(h800.bf16_dense_flops, h100.bf16_dense_flops);

  const GpuSpec& h200 = gpu("H200-SXM");
  EXPECT_DOUBLE_EQ(h200.bf16_dense_flops, h100.bf16_dense_flops);
  EXPECT_DOUBLE_EQ(h200.hbm_bytes_per_s, 4.8e12);
  EXPECT_GT(h200.hbm_bytes, 140e9);

  EXPECT_DOUBLE_EQ(gpu("A100-80GB").hbm_bytes_per_s, 2.039e12);
  EXPECT_DOUBLE_EQ(gpu("A100-40GB").hbm_bytes_per_s, 1.555e12);
  EXPECT_DOUBLE_EQ(gpu("A100-40GB").bf16_dense_flops, 312e12);
  EXPECT_EQ(gpu("A100-40GB").sm_count, 108);

  const GpuSpec& b200 = gpu("B200");
  EXPECT_DOUBLE_EQ(b200.bf16_dense_flops, 2.25e15);
  EXPECT_DOUBLE_EQ(b200.fp8_dense_flops, 4.5e15);
  EXPECT_DOUBLE_EQ(b200.hbm_bytes_per_s, 7.7e12);
  EXPECT_DOUBLE_EQ(b200.nvlink_bytes_per_s, 900e9);
  EXPECT_EQ(b200.sm_count, 148);
  EXPECT_EQ(b200.nvlink_domain, 0);  // HGX: the node

  // GB200/GB300 NVL72: 72 GPUs in one NVLink 5 domain; dense peaks are half the sparse
  // datasheet figures.
  const GpuSpec& gb200 = gpu("GB200");
  EXPECT_DOUBLE_EQ(gb200.bf16_dense_flops, 2.5e15);
  EXPECT_DOUBLE_EQ(gb200.fp8_dense_flops, 5e15);
  EXPECT_DOUBLE_EQ(gb200.hbm_bytes_per_s, 8e12);
  EXPECT_DOUBLE_EQ(gb200.tdp_watts, 1200.0);
  EXPECT_EQ(gb200.nvlink_domain, 72);
  const GpuSpec& gb300 = gpu("GB300");
  EXPECT_GT(gb300.hbm_bytes, 270e9 * 1.0);
  EXPECT_DOUBLE_EQ(gb300.tdp_watts, 1400.0);
  EXPECT_EQ(gb300.nvlink_domain, 72);
  EXPECT_TRUE(gb300.fp8_ratio_extrapolated);
}

// Per-generation GEMM efficiency: each GPU's measured best-shape matmul efficiency (MAMF
// table) over H100 SXM's 80.3%; Hopper parts are the fitted silicon (1).
TEST(GpuCatalog, GemmEfficiencyScaleFollowsTheMeasuredBestShape) {
  EXPECT_DOUBLE_EQ(gpu("H100-SXM").gemm_eff_scale, 1.0);
  EXPECT_DOUBLE_EQ(gpu("H200-SXM").gemm_eff_scale, 1.0);
  EXPECT_DOUBLE_EQ(gpu("A100-80GB").gemm_eff_scale, 1.0);  // kept at the Hopper curve, stated
  EXPECT_FALSE(gpu("A100-80GB").gemm_eff_basis.empty());
  EXPECT_NEAR(gpu("B200").gemm_eff_scale, 77.6 / 80.3, 1e-12);
  EXPECT_NEAR(gpu("GB200").gemm_eff_scale, 72.9 / 80.3, 1e-12);
  EXPECT_FALSE(gpu("GB200").gemm_eff_basis.empty());
  EXPECT_TRUE(gpu("H100-SXM").gemm_eff_basis.empty());
}

TEST(GpuCatalog, UnknownNameListsKnownOnes) {
  try {
    (void)gpu("V100");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("H100-SXM"), std::string::npos);
  }
}

TEST(GpuCatalog, CustomGpuValidatesEveryField) {
  const GpuSpec ok = custom_gpu("X1", 1e15, 2e15, 96e9, 4e12, 400e9, 800.0, 120, 1.8e9);
  EXPECT_EQ(ok.name, "X1");
  auto message = [](auto make) {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no throw");
  };
  EXPECT_NE(
      message([] { custom_gpu("X", 0, 2e15, 96e9, 4e12, 400e9, 800, 120, 1.8e9); }).find("bf16_dense_flops"),
      std::string::npos);
  EXPECT_NE(message([] { custom_gpu("X", 1e15, 2e15, -1, 4e12, 400e9, 800, 120, 1.8e9); }).find("hbm_bytes"),
            std::string::npos);
  EXPECT_NE(message([] { custom_gpu("X", 1e15, 2e15, 96e9, 4e12, 400e9, 800, 0, 1.8e9); }).find("sm_count"),
            std::string::npos);
  EXPECT_NE(
      message([] { custom_gpu("X", 1e15, 2e15, 96e9, 4e12, 0, 800, 120, 1.8e9); }).find("nvlink_bytes_per_s"),
      std::string::npos);
  EXPECT_NE(message([] { custom_gpu("", 1e15, 2e15, 96e9, 4e12, 1, 800, 120, 1.8e9); }).find("name"),
            std::string::npos);
}

// The GPU-NIC PCIe path by generation (cluster.pcie 0): A100 Gen4, Hopper / B200 / GB200 Gen5,
// Blackwell Ultra Gen6 (to its ConnectX-8); the host link of activation offloading and
// checkpoint copies: NVLink-C2C on the superchips, the host CPU's Gen5 on HGX B300 (not its
// NIC's Gen6), else the PCIe path (0).
TEST(GpuCatalog, PciePathAndHostLinkFollowTheGeneration) {
  EXPECT_EQ(gpu("A100-80GB").pcie_bytes_per_s, 32e9);
  for (const char* name : {"H100-SXM", "H800", "H200-SXM", "B200", "GB200"})
    EXPECT_EQ(gpu(name).pcie_bytes_per_s, 64e9) << name;
  for (const char* name : {"B300", "GB300"}) EXPECT_EQ(gpu(name).pcie_bytes_per_s, 128e9) << name;
  EXPECT_EQ(gpu("B300").host_link_bytes_per_s, 64e9);
  EXPECT_EQ(gpu("GB300").host_link_bytes_per_s, 225e9);
  EXPECT_EQ(gpu("H100-SXM").host_link_bytes_per_s, 0.0);
}

}  // namespace
}  // namespace ct::hardware
