#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <stdexcept>

#include "models/hardware/compute_model.h"

namespace ct::hardware {
namespace {

ComputeModel h200_model() { return ComputeModel(gpu("H200-SXM"), Calibration::h200()); }

TEST(ComputeModel, PeaksComeFromTheSpec) {
  const ComputeModel m = h200_model();
  EXPECT_DOUBLE_EQ(m.peak_flops(), 989.4e12);
  EXPECT_DOUBLE_EQ(m.hbm_bandwidth().bytes_per_second(), 4.8e12);
}

TEST(ComputeModel, LargeGemmIsComputeBoundAtPlausibleEfficiency) {
  const ComputeModel m = h200_model();
  const double t = m.gemm_time(8192, 8192, 8192).seconds();
  const double achieved = 2.0 * 8192.0 * 8192.0 * 8192.0 / t / m.peak_flops();
  EXPECT_GT(achieved, 0.6);
  EXPECT_LT(achieved, 0.85);
}

// A power limit below the rated board power slows the tensor-core clock by the GH100 law
// (limit / rated)^0.303: at 400 W an H100 SXM lands on the H100 NVL datasheet's 835 TFLOP/s
// (same die, rated 400 W), within 1%. Compute-bound kernels slow by that factor, memory-bound
// ones not at all, and a limit at the rated power changes nothing.
TEST(ComputeModel, PowerLimitSlowsComputeNotMemory) {
  GpuSpec h100 = gpu("H100-SXM");
  EXPECT_DOUBLE_EQ(clock_factor(h100), 1.0);
  GpuSpec capped = h100;
  capped.power_limit_watts = 400.0;
  EXPECT_NEAR(clock_factor(capped) * 989.4, 835.0, 0.01 * 835.0);
  capped.power_limit_watts = 500.0;
  const double f = clock_factor(capped);
  EXPECT_NEAR(f, std::pow(500.0 / 700.0, kClockPowerExponent), 1e-12);
  const ComputeModel full(h100, Calibration::h200()), slow(capped, Calibration::h200());
  const double g_full = full.gemm_time(8192, 8192, 8192).seconds(),
               g_slow = slow.gemm_time(8192, 8192, 8192).seconds();
  EXPECT_NEAR(g_slow / g_full, 1.0 / f, 0.01 / f);
  const double a_full =
      full.attention_time(4, 32, 8192, 128, true, AttentionPass::forward_backward).seconds();
  const double a_slow =
      slow.attention_time(4, 32, 8192, 128, true, AttentionPass::forward_backward).seconds();
  EXPECT_NEAR(a_slow / a_full, 1.0 / f, 0.02 / f);
  const auto bytes = ct::sim::Bytes{int64_t{1} << 30};
  EXPECT_DOUBLE_EQ(slow.elementwise_time(bytes, MemoryOp::streaming).seconds(),
                   full.elementwise_time(bytes, MemoryOp::streaming).seconds());
  capped.power_limit_watts = 701.0;
  EXPECT_THROW(validate(capped), std::invalid_argument);
}

// Steady state under the power limit (gpu_catalog.h sustained_ratio). A step made only of
// GEMMs settles where a back-to-back GEMM stream does (the measured 0.841; FP8 0.828), only
// attention where attention does (0.90); memory-bound work alone never reaches the limit (1);
// a mix lies in between, rises with its memory-bound share and falls when its GEMMs are FP8;
// a GPU without the measurement stays at 1.
TEST(ComputeModel, SteadyRatioBalancesPowerAtTheLimit) {
  const GpuSpec h200 = gpu("H200-SXM");
  EXPECT_NEAR(sustained_ratio(h200, {.gemm = 1.0}), 0.841, 1e-9);
  EXPECT_NEAR(sustained_ratio(h200, {.fp8_gemm = 1.0}), 0.828, 1e-9);
  EXPECT_NEAR(sustained_ratio(h200, {.attention = 1.0}), 0.90, 1e-9);
  EXPECT_DOUBLE_EQ(sustained_ratio(h200, {.memory = 1.0}), 1.0);
  const double gemm_heavy = sustained_ratio(h200, {.gemm = 0.8, .attention = 0.1, .memory = 0.1});
  const double mixed = sustained_ratio(h200, {.gemm = 0.6, .attention = 0.1, .memory = 0.3});
  EXPECT_LT(sustained_ratio(h200, {.fp8_gemm = 0.6, .attention = 0.1, .memory = 0.3}), mixed);
  EXPECT_GT(gemm_heavy, 0.841);
  EXPECT_LT(gemm_heavy, mixed);
  EXPECT_LT(mixed, 1.0);
  // The balance holds at the solution: average power equals the limit.
  const double b = 1.0 / kClockPowerExponent, s = mixed;
  const double energy =
      (0.6 * std::pow(0.841, -b) + 0.1 * std::pow(0.90, -b)) * std::pow(s, b - 1.0) + 0.3 * h200.memory_power;
  EXPECT_NEAR(energy / (0.7 / s + 0.3), 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(sustained_ratio(gpu("A100-80GB"), {.gemm = 1.0}), 1.0);
  EXPECT_DOUBLE_EQ(gpu("H100-SXM").sustained_gemm, h200.sustained_gemm);
  EXPECT_DOUBLE_EQ(gpu("B300").sustained_gemm, 0.0);  // Blackwell Ultra: not measured
  // B200 at 1,000 W: attention back to back at 1,237 of 1,437.5 TFLOP/s (flashinfer#2899), its
  // GEMMs in H200's relation to attention. GB200, the same die at 1,200 W, sustains B200's
  // throughput x (1200 / 1000)^0.303 in every kernel class; since its own burst (MAMF matmuls,
  // GB200's attention fraction of a 2.5 PF peak) is already above B200's, its ratio to that
  // burst is B200's ratio x the power factor x B200's burst over GB200's, below the power factor
  // alone (which would count the watts twice).
  const GpuSpec b200 = gpu("B200"), gb200 = gpu("GB200");
  EXPECT_NEAR(sustained_ratio(b200, {.attention = 1.0}), 1237.0 / 1437.5, 1e-9);
  EXPECT_NEAR(b200.sustained_gemm / b200.sustained_attention, 0.841 / 0.90, 1e-12);
  const double power = std::pow(1.2, kClockPowerExponent);
  auto sustained = [](const GpuSpec& g) {
    return std::array<double, 3>{
        g.bf16_dense_flops * g.gemm_eff_scale * g.sustained_gemm,
        g.fp8_dense_flops * g.gemm_eff_scale * g.fp8_gemm_ratio * g.sustained_fp8_gemm,
        g.bf16_dense_flops * g.attention_fwd_scale * g.sustained_attention};
  };
  for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(sustained(gb200)[k] / sustained(b200)[k], power, 1e-12) << k;
  EXPECT_LT(gb200.sustained_gemm, b200.sustained_gemm * power);
  EXPECT_LT(gb200.sustained_fp8_gemm, b200.sustained_fp8_gemm * power);
  EXPECT_NEAR(gb200.sustained_attention, b200.sustained_attention * power * 2.25 / 2.5, 1e-12);
  GpuSpec bad = h200;
  bad.sustained_gemm = 1.2;
  EXPECT_THROW(validate(bad), std::invalid_argument);
}

// At a steady ratio s every GEMM and attention kernel is the burst kernel (no per-kernel
// throttle) slowed by 1/s, whatever its length; memory-bound kernels keep their time.
TEST(ComputeModel, SteadyRatioReplacesThePerKernelThrottle) {
  ComputeModel burst = h200_model(), steady = h200_model();
  burst.set_steady(1.0);
  steady.set_steady(0.85);
  const Calibration::Gemm& g = Calibration::h200().gemm;
  for (int64_t n : {2048, 8192}) {
    const double nd = static_cast<double>(n), flops = 2.0 * nd * nd * nd;
    const double per_kernel = 1.0 - g.throttle_delta * flops / (flops + g.throttle_flops);
    EXPECT_NEAR(h200_model().gemm_efficiency(n, n, n), burst.gemm_efficiency(n, n, n) * per_kernel, 1e-12);
    EXPECT_NEAR(steady.gemm_efficiency(n, n, n), 0.85 * burst.gemm_efficiency(n, n, n), 1e-12);
  }
  const double a_burst = burst.attention_time(1, 32, 16384, 128, true, AttentionPass::forward).seconds();
  const double a_steady = steady.attention_time(1, 32, 16384, 128, true, AttentionPass::forward).seconds();
  EXPECT_NEAR(a_steady / a_burst, 1.0 / 0.85, 3e-3);  // the 32 us launch floor keeps its time
  const auto bytes = ct::sim::Bytes{int64_t{1} << 30};
  EXPECT_DOUBLE_EQ(steady.elementwise_time(bytes).seconds(), burst.elementwise_time(bytes).seconds());
  EXPECT_THROW(steady.set_steady(1.5), std::invalid_argument);
  EXPECT_THROW(steady.set_steady(-0.1), std::invalid_argument);
}

TEST(ComputeModel, TinyGemmSitsOnTheLaunchFloor) {
  const ComputeModel m = h200_model();
  const double floor = Calibration::h200().gemm.launch_s;
  EXPECT_NEAR(m.gemm_time(64, 64, 64).seconds(), floor, 0.01 * floor);
}

TEST(ComputeModel, TimesGrowWithWork) {
  const ComputeModel m = h200_model();
  EXPECT_LT(m.gemm_time(4096, 4096, 4096), m.gemm_time(4096, 4096, 8192));
  EXPECT_LT(m.gemm_time(4096, 4096, 4096), m.gemm_time(4096, 4096, 4096, 2));
  EXPECT_LT(m.attention_time(1, 16, 4096, 128, true, AttentionPass::forward),
            m.attention_time(1, 16, 4096, 128, false, AttentionPass::forward));
  EXPECT_LT(m.attention_time(1, 16, 4096, 128, true, AttentionPass::forward),
            m.attention_time(1, 16, 4096, 128, true, AttentionPass::forward_backward));
  EXPECT_LT(m.elementwise_time(ct::sim::Bytes{1 << 20}), m.elementwise_time(ct::sim::Bytes{1 << 30}));
  EXPECT_LT(m.elementwise_time(ct::sim::Bytes{1 << 30}, MemoryOp::streaming),
            m.elementwise_time(ct::sim::Bytes{1 << 30}, MemoryOp::softmax));
}

// Sliding-window attention: only the causal band w S - w (w - 1) / 2 of query-key pairs, at the
// causal kernel's efficiency at 2 min(w, S) (the same mean band). A window that covers the
// sequence changes nothing; a context-parallel rank (S / c queries against all S keys) does
// 1/c of the band.
TEST(ComputeModel, SlidingWindowAttentionComputesTheBand) {
  const ComputeModel m = h200_model();
  const auto t = [&](int64_t seq, int64_t window, int64_t kv = 0, AttentionPass p = AttentionPass::forward) {
    return m.attention_time(2, 16, seq, 128, true, p, kv, window).seconds();
  };
  EXPECT_DOUBLE_EQ(t(4096, 0), t(4096, 4096));
  EXPECT_DOUBLE_EQ(t(4096, 0), t(4096, 8192));
  EXPECT_LT(t(4096, 1024), t(4096, 0));
  // Closed form against the causal kernel at 2w: pairs(w) / pairs(causal at 2w) x its time.
  const double s = 65536, w = 1024;
  const double band = w * s - w * (w - 1) / 2, causal_2w = (2 * w) * (2 * w) / 2;
  const double floor = Calibration::h200().attention.launch_s;  // its soft max with p ~ 1 adds it
  const double per_pair = (t(2048, 0) - floor) / causal_2w;
  EXPECT_NEAR(t(65536, 1024) - floor, per_pair * band, 0.01 * per_pair * band);
  // Context parallelism: a quarter of the queries, a quarter of the band.
  EXPECT_NEAR(t(16384, 1024, 65536) - floor, (t(65536, 1024) - floor) / 4, 1e-3 * t(65536, 1024));
  EXPECT_LT(t(65536, 1024, 0, AttentionPass::forward), t(65536, 1024, 0, AttentionPass::forward_backward));
  EXPECT_THROW((void)m.attention_time(1, 1, 128, 64, true, AttentionPass::forward, 0, -1),
               std::invalid_argument);
}

TEST(ComputeModel, BatchedGemmEqualsOneBigOneWhenTilesDivideEvenly) {
  const ComputeModel m = h200_model();
  // 4 problems of 4096 rows tile exactly like one problem of 16384 rows except for operand
  // bytes, and both are compute bound here.
  const double batched = m.gemm_time(4096, 4096, 4096, 4).seconds();
  const double stacked = m.gemm_time(16384, 4096, 4096).seconds();
  EXPECT_NEAR(batched, stacked, 0.01 * stacked);
}

TEST(ComputeModel, OtherGpusScaleWithTheirSpecs) {
  const ComputeModel h200 = h200_model();
  const ComputeModel h100(gpu("H100-SXM"), Calibration::h200());
  const ComputeModel b200(gpu("B200"), Calibration::h200());
  const ComputeModel a100(gpu("A100-80GB"), Calibration::h200());
  // Same compute peak and SMs: a compute-bound GEMM takes almost the same time on H100 and
  // H200 (only the small memory term of the soft maximum differs).
  EXPECT_NEAR(h100.gemm_time(8192, 8192, 8192).seconds(), h200.gemm_time(8192, 8192, 8192).seconds(),
              0.005 * h200.gemm_time(8192, 8192, 8192).seconds());
  // A large copy is memory bound: time scales with the HBM bandwidth ratio.
  const ct::sim::Bytes big{int64_t{8} << 30};
  EXPECT_NEAR(h100.elementwise_time(big).seconds() / h200.elementwise_time(big).seconds(), 4.8 / 3.35, 0.01);
  // B200 is faster on big GEMMs by about the peak ratio times its measured efficiency ratio
  // (wave quantization differs a little).
  const double ratio =
      h200.gemm_time(16384, 16384, 16384).seconds() / b200.gemm_time(16384, 16384, 16384).seconds();
  EXPECT_NEAR(ratio, 2.25e15 / 989.4e12 * 77.6 / 80.3, 0.05 * 2.25e15 / 989.4e12);
  // gemm_eff_scale alone: the same spec at scale 1 is slower on a compute-bound GEMM by the
  // scale, and the efficiency is capped at 1.
  GpuSpec unscaled = gpu("GB200");
  unscaled.gemm_eff_scale = 1.0;
  const ComputeModel gb200(gpu("GB200"), Calibration::h200());
  const ComputeModel gb200_unscaled(unscaled, Calibration::h200());
  EXPECT_NEAR(
      gb200_unscaled.gemm_efficiency(16384, 16384, 16384) / gb200.gemm_efficiency(16384, 16384, 16384),
      80.3 / 72.9, 1e-9);
  GpuSpec silly = gpu("H100-SXM");
  silly.gemm_eff_scale = 5.0;
  EXPECT_LE(ComputeModel(silly, Calibration::h200()).gemm_efficiency(16384, 16384, 16384), 1.0);
  EXPECT_GT(a100.attention_time(1, 32, 8192, 128, true, AttentionPass::forward),
            h200.attention_time(1, 32, 8192, 128, true, AttentionPass::forward));
  // Launch floors are kept.
  EXPECT_EQ(b200.gemm_time(64, 64, 64), h200.gemm_time(64, 64, 64));
}

// Per-generation flash attention: the cuDNN SDPA benchmark's fraction of peak on Blackwell over
// H200's scales the fitted efficiencies, forward and backward apart (gpu_catalog.cpp).
TEST(ComputeModel, AttentionFollowsTheMeasuredBlackwellRatios) {
  for (const char* name : {"GB200", "GB300", "B200"}) {
    GpuSpec unscaled = gpu(name);
    unscaled.attention_fwd_scale = unscaled.attention_bwd_scale = 1.0;
    const ComputeModel scaled(gpu(name), Calibration::h200());
    const ComputeModel plain(unscaled, Calibration::h200());
    const double fwd = scaled.attention_time(2, 64, 32768, 128, true, AttentionPass::forward).seconds();
    const double fwd_plain = plain.attention_time(2, 64, 32768, 128, true, AttentionPass::forward).seconds();
    const double both =
        scaled.attention_time(2, 64, 32768, 128, true, AttentionPass::forward_backward).seconds();
    const double both_plain =
        plain.attention_time(2, 64, 32768, 128, true, AttentionPass::forward_backward).seconds();
    EXPECT_NEAR(fwd_plain / fwd, gpu(name).attention_fwd_scale, 1e-3) << name;
    EXPECT_NEAR((both_plain - fwd_plain) / (both - fwd), gpu(name).attention_bwd_scale, 1e-3) << name;
  }
  EXPECT_LT(gpu("GB200").attention_bwd_scale, 1.0);
  EXPECT_GT(gpu("GB300").attention_fwd_scale, 1.0);
  EXPECT_DOUBLE_EQ(gpu("H100-SXM").attention_fwd_scale, 1.0);
  EXPECT_TRUE(gpu("H100-SXM").attention_basis.empty());
  EXPECT_FALSE(gpu("A100-80GB").attention_basis.empty());  // not measured: said in the report
  GpuSpec bad = gpu("H100-SXM");
  bad.attention_bwd_scale = 0.0;
  EXPECT_THROW(validate(bad), std::invalid_argument);
}

TEST(ComputeModel, RejectsBadArguments) {
  const ComputeModel m = h200_model();
  EXPECT_THROW((void)m.gemm_time(0, 1, 1), std::invalid_argument);
  EXPECT_THROW((void)m.gemm_time(1, 1, 1, 0), std::invalid_argument);
  EXPECT_THROW((void)m.attention_time(1, 1, -1, 128, true, AttentionPass::forward), std::invalid_argument);
  EXPECT_THROW((void)m.elementwise_time(ct::sim::Bytes{-1}), std::invalid_argument);
  Calibration bad = Calibration::h200();
  bad.gemm.eff_max = 1.5;
  EXPECT_THROW(ComputeModel(gpu("H200-SXM"), bad), std::invalid_argument);
  bad = Calibration::h200();
  bad.elementwise.overlap_p = 0.5;
  EXPECT_THROW(ComputeModel(gpu("H200-SXM"), bad), std::invalid_argument);
}

}  // namespace
}  // namespace ct::hardware

namespace ct::hardware {
namespace {

// MXFP8: block-scaled GEMMs at kMxfp8KernelRatio of per-tensor FP8, Blackwell only.
TEST(ComputeModel, Mxfp8GemmOnBlackwellOnly) {
  const ComputeModel b200(gpu("B200"), Calibration::h200());
  const double fp8 = b200.gemm_time(16384, 16384, 16384, 1, true).seconds();
  const double mx = b200.gemm_time(16384, 16384, 16384, 1, true, true).seconds();
  EXPECT_NEAR(fp8 / mx, kMxfp8KernelRatio, 0.01);
  const ComputeModel h100(gpu("H100-SXM"), Calibration::h200());
  EXPECT_THROW((void)h100.gemm_time(1024, 1024, 1024, 1, true, true), std::invalid_argument);
}

// NVFP4: a compute-bound GEMM runs at the dense FP4 peak with an MXFP8 GEMM's efficiency, so
// it takes the FP8 / FP4 peak ratio of an MXFP8 one (B200 4.5 / 9 PF, B300 4.5 / 13.125);
// operands of 0.5625 bytes move less than FP8's; no FP4 on Hopper.
TEST(ComputeModel, Nvfp4GemmAtTheFp4PeakOnBlackwellOnly) {
  for (const char* name : {"B200", "B300", "GB200", "GB300"}) {
    const GpuSpec g = gpu(name);
    ASSERT_GT(g.fp4_dense_flops, g.fp8_dense_flops) << name;
    const ComputeModel m(g, Calibration::h200());
    const double mx = m.gemm_time(16384, 16384, 16384, 1, true, true).seconds();
    const double fp4 = m.gemm_time(16384, 16384, 16384, 1, true, false, true).seconds();
    EXPECT_NEAR(mx / fp4, g.fp4_dense_flops / g.fp8_dense_flops, 0.02) << name;
  }
  EXPECT_DOUBLE_EQ(gpu("B200").fp4_dense_flops, 9e15);
  EXPECT_DOUBLE_EQ(gpu("GB300").fp4_dense_flops, 15e15);
  // A memory-bound shape (one row against a large weight): the FP4 weight is 0.5625 of FP8's bytes.
  const ComputeModel b200(gpu("B200"), Calibration::h200());
  const double mx_thin = b200.gemm_time(1, 32768, 32768, 1, true, true).seconds();
  const double fp4_thin = b200.gemm_time(1, 32768, 32768, 1, true, false, true).seconds();
  EXPECT_NEAR(fp4_thin / mx_thin, 0.5625, 0.05);
  const ComputeModel h100(gpu("H100-SXM"), Calibration::h200());
  EXPECT_EQ(gpu("H100-SXM").fp4_dense_flops, 0.0);
  EXPECT_THROW((void)h100.gemm_time(1024, 1024, 1024, 1, true, false, true), std::invalid_argument);
}

// FP8 GEMMs run at the FP8 peak times the measured FP8/BF16 efficiency ratio (MAMF: H100
// 0.882): a large compute-bound GEMM is 2 x 0.882 = 1.76x faster; A100 has no FP8.
TEST(ComputeModel, Fp8GemmAtTheMeasuredRatio) {
  const ComputeModel h100(gpu("H100-SXM"), Calibration::h200());
  const double bf16 = h100.gemm_time(8192, 8192, 8192).seconds();
  const double fp8 = h100.gemm_time(8192, 8192, 8192, 1, true).seconds();
  EXPECT_NEAR(bf16 / fp8, 2.0 * 0.882, 0.03);
  const ComputeModel a100(gpu("A100-80GB"), Calibration::h200());
  EXPECT_THROW((void)a100.gemm_time(1024, 1024, 1024, 1, true), std::invalid_argument);
  EXPECT_TRUE(gpu("H200-SXM").fp8_ratio_extrapolated);
  EXPECT_FALSE(gpu("H100-SXM").fp8_ratio_extrapolated);
}

// Context parallelism: a rank's queries (seq / cp) against all keys do 1/cp of the work of the
// whole sequence, i.e. cp times the work of its own chunk alone.
TEST(ComputeModel, AttentionAgainstLongerKeysCostsMore) {
  const ComputeModel m(gpu("H100-SXM"), Calibration::h200());
  const double own = m.attention_time(1, 32, 8192, 128, true, AttentionPass::forward).seconds();
  const double all = m.attention_time(1, 32, 8192, 128, true, AttentionPass::forward, 8 * 8192).seconds();
  EXPECT_NEAR(all / own, 8.0, 0.5);
}

}  // namespace
}  // namespace ct::hardware
