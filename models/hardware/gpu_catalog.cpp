#include "models/hardware/gpu_catalog.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace ct::hardware {
namespace {

constexpr double kGiB = 1073741824.0;

// Sources (vendor datasheets; "GB" of HBM capacity is taken as GiB, which is what the
// devices report: 80 GB A100/H100 show 81920/81559 MiB, and the calibration H200 reports
// 150.1e9 bytes usable against 141 GiB = 151.4e9):
//   A100: NVIDIA A100 Tensor Core GPU datasheet (SXM4): BF16 312 TFLOPS dense (624 sparse),
//         HBM2 1,555 GB/s (40GB) and HBM2e 2,039 GB/s (80GB), NVLink 600 GB/s bidirectional,
//         400 W, 108 SMs, 1410 MHz boost (A100 whitepaper). No FP8 tensor cores: fp8 = bf16 rate.
//   H100 SXM: NVIDIA H100 Tensor Core GPU datasheet: BF16 1,979 TFLOPS sparse (989.4 dense),
//         FP8 3,958 sparse (1,979 dense), 80 GB HBM3 3.35 TB/s, NVLink 900 GB/s bidirectional,
//         up to 700 W; 132 SMs, 1980 MHz max boost (H100 whitepaper / nvidia-smi).
//   H800 SXM: as H100 SXM with NVLink 400 GB/s bidirectional (NVIDIA H800 product brief).
//   H200 SXM: NVIDIA H200 datasheet: compute as H100 SXM, 141 GB HBM3e, 4.8 TB/s, NVLink
//         900 GB/s bidirectional, up to 700 W; 132 SMs, 1980 MHz (calibration file "about").
//   B200: NVIDIA DGX/HGX B200 datasheets: FP16/BF16 4.5 PFLOPS sparse (2.25 dense), FP8 9 PFLOPS
//         sparse (4.5 dense), 180 GB HBM3e per GPU in HGX/DGX B200 (192 GB physical), NVLink 5
//         1.8 TB/s bidirectional, 1000 W; 148 SMs. The 1.98 GHz boost clock of every Blackwell
//         row is from third-party spec tables (not in the NVIDIA datasheet).
// FP8 GEMMs (fp8_gemm_ratio): best-shape torch.matmul throughput from the MAMF table
// (stas00/ml-engineering @ 7bc7c30, compute/accelerator/README.md; copied with sources into
// tests/validation/gemm_peak_achievable.json): H100 SXM bf16 794.5 of 989, fp8_e4m3 1402.6 of
// 1979 TFLOP/s -> (1402.6/1979) / (794.5/989) = 0.882; B200 SXM bf16 1745 of 2250, fp8 3432.5
// of 4500 -> 0.983; B300 SXM bf16 1769 of 2250, fp8 3353.3 of 4500 -> 0.948; GB200 bf16 1822
// of 2500, fp8 3615.6 of 5000 -> 0.992. H800 and H200 share H100's die, GB300 B300's: their
// ratio, flagged as carried over. A100 has no FP8 tensor cores.
// BF16 GEMMs of other silicon (gemm_eff_scale): the same table's best-shape efficiency over
// H100 SXM's 80.3% (the compute model is fitted on H200 kernels, H100's die): B200 SXM 77.6%
// -> 0.966, B300 SXM 78.6% -> 0.979, GB200 72.9% -> 0.908 (GB300: B300's, carried over).
// Only the best shape is measured for these GPUs: the shape of the efficiency curve (K_half,
// waves, launch floors) stays the H200 fit's. A100 is NOT scaled up by its 86.9%: that is
// torch 2.6 / CUDA 12.6 on the best shape, and Megatron's published A100 runs (SC'21 Tables
// 1-2, MT-NLG) are already over-predicted with the Hopper curve (scaling them by 1.082 took
// SC'21 Table 1 from 8.7% to 12.1% mean error and Table 2 from 5.1% to 9.2%); A100 keeps the
// Hopper curve, stated as an assumption in every A100 report.
//   B200 / GB200: NVIDIA Blackwell datasheet table "GB200 NVL72 vs HGX B200" (tensor figures
//         there are with sparsity; dense = half): GB200 BF16 2.5 PF, FP8 5 PF dense, 186 GB
//         HBM3e at 8 TB/s, up to 1,200 W; B200 2.25 / 4.5 PF, 180 GB at 7.7 TB/s, 1,000 W.
//         GB200 NVL72 page: 72 GPUs in one NVLink 5 domain (130 TB/s = 1.8 TB/s bidirectional,
//         900 GB/s per direction per GPU), 18 compute trays of 4 GPUs, 13.4 TB HBM3e.
//   B300 / GB300 (Blackwell Ultra): NVIDIA "Inside NVIDIA Blackwell Ultra" blog and GB300 NVL72
//         page: FP8 720 PF per rack with sparsity (5 PF dense per GPU), BF16 2.5 PF dense,
//         288 GB HBM3e (279 GB usable per DGX/GB300 reference docs) at 8 TB/s, up to 1,400 W;
//         HGX/DGX B300: 2.25 / 4.5 PF dense, 270 GB usable at 7.7 TB/s, 1,100 W (DGX Cloud
//         benchmarking reference).
//   SM counts: B200/B300 148 (2 dies x 74), GB200/GB300 152 as cudaDeviceProp reports them in
//         public code (not a datasheet figure; Blackwell Ultra's full die has 160).
// GB200 / GB300: one Grace CPU reaches its two Blackwell GPUs over NVLink-C2C, 900 GB/s
// bidirectional per superchip (NVIDIA GB200 NVL72 and GB300 NVL72 pages, "NVLink-C2C 900
// GB/s"): 225 GB/s per GPU and direction when both GPUs offload at once, as they do in a
// data-parallel step. HGX parts: 0 = the node's PCIe path (cluster.pcie).
//
// The GPU-NIC PCIe path, per direction at x16: A100 PCIe Gen4, 32 GB/s (A100 datasheet: "PCIe
// Gen4 64 GB/s", both directions); Hopper, B200 and GB200 PCIe Gen5, 64 GB/s (H100 datasheet:
// "PCIe Gen5 128 GB/s"; HGX B200 and GB200 NVL72 pair each GPU with a PCIe Gen5 ConnectX-7);
// Blackwell Ultra (B300, GB300) PCIe Gen6, 128 GB/s, to a ConnectX-8 whose built-in PCIe Gen6
// switch gives each GPU a Gen6 x16 link (NVIDIA's ConnectX-8 talk, Hot Chips 2025: "a Gen6 x16
// link to the B300 GPU" in GB300 NVL72; HGX B300 carries the ConnectX-8s on the GPU board). A
// Gen5 path would hold an 800 Gb/s NIC to 64 GB/s. The host CPU of an HGX B300 (Xeon, PCIe Gen5)
// still reaches its GPUs at Gen5 x16 through that switch: B300's host link stays 64 GB/s.
// Dense FP4 tensor-core peaks (NVFP4 / MXFP4; NVIDIA's tables give FP4 "with sparsity |
// without"): HGX B200 144 | 72 PFLOPS for 8 GPUs (9 PF per GPU, 1,000 W), GB200 NVL72 1,440 | 720
// PFLOPS for 72 (10 PF per GPU, 1,200 W), HGX B300 144 | 105 PFLOPS for 8 (13.1 PF per GPU),
// GB300 NVL72 1,440 | 1,080 PFLOPS for 72 (15 PF per GPU; "1.1 EF dense FP4", Blackwell Ultra's
// 1.5x of Blackwell). Hopper and Ampere have no FP4 tensor cores (0).
std::vector<GpuSpec> with_fp4(std::vector<GpuSpec> specs) {
  for (GpuSpec& g : specs) {
    if (g.name == "B200") g.fp4_dense_flops = 9e15;
    if (g.name == "GB200") g.fp4_dense_flops = 10e15;
    if (g.name == "B300") g.fp4_dense_flops = 105e15 / 8.0;
    if (g.name == "GB300") g.fp4_dense_flops = 15e15;
  }
  return specs;
}

std::vector<GpuSpec> with_host_links(std::vector<GpuSpec> specs) {
  for (GpuSpec& g : specs) {
    if (g.name == "GB200" || g.name == "GB300") g.host_link_bytes_per_s = 900e9 / 2.0 / 2.0;
    if (g.name == "B300") g.host_link_bytes_per_s = 64e9;
    g.pcie_bytes_per_s = g.sm_arch < 90 ? 32e9 : g.name == "B300" || g.name == "GB300" ? 128e9 : 64e9;
  }
  return specs;
}

// Flash attention of other silicon (attention_fwd_scale / attention_bwd_scale): cuDNN's SDPA
// training benchmark (NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training, config llama3.1:
// 64 query / 8 KV heads of 128, causal, bf16, 2K-32K tokens), each GPU's TFLOP/s as a fraction
// of its dense BF16 peak over H200's (cuDNN 9.19.1, results/h200_919_only_cudnn, Feb 2026):
// GB200 (cuDNN 9.22, results/llama3.1/gb200, Apr 2026) forward 0.897 / 0.943 / 0.967 / 1.004 /
// 0.933, backward 0.947 / 0.959 / 0.974 / 0.908 / 0.835 -> 0.949 / 0.924; GB300 forward
// 1.123-1.141 -> 1.131, backward 1.015-1.050 -> 1.034 (Blackwell Ultra's doubled exponent
// throughput shows in the forward). B200 and B300 carry their die's (GB200's, GB300's) ratios.
// A100 keeps H200's efficiencies (nothing measured with the same harness), stated in the report.
std::vector<GpuSpec> with_attention_scales(std::vector<GpuSpec> specs) {
  const std::string bench = "cuDNN SDPA training benchmark (cudnn-frontend), fraction of peak vs H200";
  for (GpuSpec& g : specs) {
    if (g.name == "GB200" || g.name == "B200") {
      g.attention_fwd_scale = 0.949;
      g.attention_bwd_scale = 0.924;
      g.attention_basis =
          g.name == "GB200" ? "GB200 " + bench : "GB200 " + bench + ", carried over to B200 (same die)";
    } else if (g.name == "GB300" || g.name == "B300") {
      g.attention_fwd_scale = 1.131;
      g.attention_bwd_scale = 1.034;
      g.attention_basis =
          g.name == "GB300" ? "GB300 " + bench : "GB300 " + bench + ", carried over to B300 (same die)";
    } else if (g.sm_arch < 90) {
      g.attention_basis = "not measured: H200's attention efficiencies assumed";
    }
  }
  return specs;
}

// Steady state under the power limit (sustained_gemm, sustained_attention, memory_power): one
// H200 SXM at 700 W (tests/data/h200_sustained: each kernel back to back for 10-30 s against
// 10 calls after 5 s idle, NVML power and clock every 50 ms). Large bf16 GEMMs keep
// 0.833-0.857 of their burst TFLOP/s (five shapes, mean 0.841), an FP8 GEMM 0.828 (8192^3,
// torch._scaled_mm: one shape), causal flash attention forward+backward 0.886-0.915 (mean
// 0.90), and an HBM copy runs at full speed and clock drawing 474 W (0.68 of the limit). H100 SXM and H800
// are the same GH100 die at the same 700 W: carried over, and said so. B200 and GB200 rest on one
// Blackwell attention measurement (below). No other GPU is measured: 0, the calibration's per-kernel
// throttle term stands in (A100's published 2021-22 runs are matched with it, SC'21 and Korthikanti sets;
// B300 / GB300 are a different die).
std::vector<GpuSpec> with_sustained(std::vector<GpuSpec> specs) {
  const std::string measured = "measured on H200 at 700 W (tests/data/h200_sustained)";
  for (GpuSpec& g : specs) {
    if (g.name == "H200-SXM" || g.name == "H100-SXM" || g.name == "H800") {
      g.sustained_gemm = 0.841;
      g.sustained_fp8_gemm = 0.828;
      g.sustained_attention = 0.90;
      g.memory_power = 474.0 / 700.0;
      g.sustained_basis = g.name == "H200-SXM" ? measured : measured + ", carried over (same die and power)";
    }
    if (g.name == "B200") {
      // Blackwell B200 at 1,000 W: FA4 bf16 attention run back to back settles at 1,237 TFLOP/s
      // against 1,425-1,450 in its first 20 iterations (flashinfer-ai/flashinfer#2899: the SM
      // clock falls from 1,965 to about 1,580 MHz): 0.86. GEMMs are not measured on this die;
      // they keep H200's GEMM-to-attention relation (0.841 / 0.90 bf16, 0.828 / 0.90 FP8), and
      // memory-bound kernels H200's draw (0.68 of the limit).
      const double attention = 1237.0 / 1437.5;
      g.sustained_attention = attention;
      g.sustained_gemm = attention * 0.841 / 0.90;
      g.sustained_fp8_gemm = attention * 0.828 / 0.90;
      g.memory_power = 474.0 / 700.0;
      g.sustained_basis =
          "B200 attention measured back to back (flashinfer-ai/flashinfer#2899); GEMMs and memory-bound "
          "kernels extrapolated from H200's";
    }
  }
  // GB200 is B200's die at 1,200 W. What the die sustains is set by its power limit: B200's
  // sustained throughput x (1200 / 1000)^0.303 (kClockPowerExponent). Its burst is not B200's:
  // GB200's own best-shape matmuls (MAMF table, at its 1,200 W) run 4.4% (bf16) and 5.3% (FP8)
  // faster than B200's, and its attention carries GB200's measured fraction of a 2.5 PF peak
  // against B200's 2.25. So GB200's ratio to its own burst is B200's x the power factor x
  // B200's burst over GB200's, per kernel class; scaling B200's ratio by the power alone would
  // count the extra watts twice (once in the MAMF burst, once in the ratio).
  const auto b200 =
      std::find_if(specs.begin(), specs.end(), [](const GpuSpec& s) { return s.name == "B200"; });
  for (GpuSpec& g : specs) {
    if (g.name != "GB200" || b200 == specs.end()) continue;
    const double at_limit = std::pow(g.tdp_watts / b200->tdp_watts, kClockPowerExponent);
    const double gemm =
        (b200->bf16_dense_flops * b200->gemm_eff_scale) / (g.bf16_dense_flops * g.gemm_eff_scale);
    const double fp8 = (b200->fp8_dense_flops * b200->gemm_eff_scale * b200->fp8_gemm_ratio) /
                       (g.fp8_dense_flops * g.gemm_eff_scale * g.fp8_gemm_ratio);
    const double attention =
        (b200->bf16_dense_flops * b200->attention_fwd_scale) / (g.bf16_dense_flops * g.attention_fwd_scale);
    g.sustained_attention = std::min(1.0, b200->sustained_attention * at_limit * attention);
    g.sustained_gemm = std::min(1.0, b200->sustained_gemm * at_limit * gemm);
    g.sustained_fp8_gemm = std::min(1.0, b200->sustained_fp8_gemm * at_limit * fp8);
    g.memory_power = b200->memory_power;
    g.sustained_basis = b200->sustained_basis +
                        "; GB200 (same die, 1,200 W): B200's sustained throughput x (1200 / "
                        "1000)^0.303, over GB200's own burst";
  }
  return specs;
}

const std::vector<GpuSpec>& catalog() {
  auto spec = [](std::string name, double bf16, double fp8, double hbm_gib, double hbm_bw, double nvlink,
                 double tdp, int sms, double clock, double fp8_ratio, bool fp8_carried, double eff_scale,
                 std::string eff_basis, int nvlink_domain, int arch) {
    return GpuSpec{
        std::move(name), bf16,        fp8,       hbm_gib * kGiB,       hbm_bw,        nvlink, tdp, sms, clock,
        fp8_ratio,       fp8_carried, eff_scale, std::move(eff_basis), nvlink_domain, arch};
  };
  const std::string a100 =
      "the Hopper curve kept: A100's best-shape 86.9% (MAMF, 2025 software) over-predicts its published "
      "2021-22 runs";
  const std::string b200 = "B200 SXM best-shape matmul 77.6% of peak vs H100 SXM 80.3% (MAMF table)";
  const std::string b300 = "B300 SXM best-shape matmul 78.6% of peak vs H100 SXM 80.3% (MAMF table)";
  const std::string gb200 = "GB200 best-shape matmul 72.9% of peak vs H100 SXM 80.3% (MAMF table)";
  static const std::vector<GpuSpec> specs = with_fp4(with_sustained(with_attention_scales(with_host_links({
      spec("A100-40GB", 312e12, 312e12, 40, 1.555e12, 300e9, 400.0, 108, 1.41e9, 0.0, false, 1.0, a100, 0,
           80),
      spec("A100-80GB", 312e12, 312e12, 80, 2.039e12, 300e9, 400.0, 108, 1.41e9, 0.0, false, 1.0, a100, 0,
           80),
      spec("H100-SXM", 989.4e12, 1979e12, 80, 3.35e12, 450e9, 700.0, 132, 1.98e9, 0.882, false, 1.0, "", 0,
           90),
      spec("H800", 989.4e12, 1979e12, 80, 3.35e12, 200e9, 700.0, 132, 1.98e9, 0.882, true, 1.0, "", 0, 90),
      spec("H200-SXM", 989.4e12, 1979e12, 141, 4.8e12, 450e9, 700.0, 132, 1.98e9, 0.882, true, 1.0, "", 0,
           90),
      spec("B200", 2.25e15, 4.5e15, 180, 7.7e12, 900e9, 1000.0, 148, 1.98e9, 0.983, false, 77.6 / 80.3, b200,
           0, 100),
      spec("B300", 2.25e15, 4.5e15, 270, 7.7e12, 900e9, 1100.0, 148, 1.98e9, 0.948, false, 78.6 / 80.3, b300,
           0, 100),
      spec("GB200", 2.5e15, 5e15, 186, 8e12, 900e9, 1200.0, 152, 1.98e9, 0.992, false, 72.9 / 80.3, gb200, 72,
           100),
      spec("GB300", 2.5e15, 5e15, 279, 8e12, 900e9, 1400.0, 152, 1.98e9, 0.948, true, 78.6 / 80.3,
           b300 + ", carried over to GB300 (same die)", 72, 100),
  }))));
  return specs;
}

void require_positive(double value, const char* field, const std::string& gpu_name) {
  if (!std::isfinite(value) || value <= 0.0) {
    throw std::invalid_argument("GpuSpec '" + gpu_name + "': " + field +
                                " must be a finite positive number, got " + std::to_string(value));
  }
}

}  // namespace

void validate(const GpuSpec& spec) {
  if (spec.name.empty()) throw std::invalid_argument("GpuSpec: name must not be empty");
  require_positive(spec.bf16_dense_flops, "bf16_dense_flops", spec.name);
  require_positive(spec.fp8_dense_flops, "fp8_dense_flops", spec.name);
  if (!std::isfinite(spec.fp4_dense_flops) || spec.fp4_dense_flops < 0.0) {
    throw std::invalid_argument("GpuSpec '" + spec.name +
                                "': fp4_dense_flops must be a finite number >= 0, got " +
                                std::to_string(spec.fp4_dense_flops));
  }
  require_positive(spec.hbm_bytes, "hbm_bytes", spec.name);
  require_positive(spec.hbm_bytes_per_s, "hbm_bytes_per_s", spec.name);
  require_positive(spec.nvlink_bytes_per_s, "nvlink_bytes_per_s", spec.name);
  require_positive(spec.tdp_watts, "tdp_watts", spec.name);
  if (spec.sm_count <= 0) {
    throw std::invalid_argument("GpuSpec '" + spec.name + "': sm_count must be positive, got " +
                                std::to_string(spec.sm_count));
  }
  require_positive(spec.sm_clock_hz, "sm_clock_hz", spec.name);
  require_positive(spec.gemm_eff_scale, "gemm_eff_scale", spec.name);
  require_positive(spec.attention_fwd_scale, "attention_fwd_scale", spec.name);
  require_positive(spec.attention_bwd_scale, "attention_bwd_scale", spec.name);
  if (spec.power_limit_watts < 0.0 || !std::isfinite(spec.power_limit_watts) ||
      spec.power_limit_watts > spec.tdp_watts) {
    throw std::invalid_argument(
        "GpuSpec '" + spec.name + "': power_limit_watts must be between 0 (the rated " +
        std::to_string(spec.tdp_watts) + " W) and tdp_watts, got " + std::to_string(spec.power_limit_watts));
  }
  for (const auto& [value, field] : {std::pair{spec.sustained_gemm, "sustained_gemm"},
                                     std::pair{spec.sustained_fp8_gemm, "sustained_fp8_gemm"},
                                     std::pair{spec.sustained_attention, "sustained_attention"},
                                     std::pair{spec.memory_power, "memory_power"}}) {
    if (!std::isfinite(value) || value < 0.0 || value > 1.0) {
      throw std::invalid_argument("GpuSpec '" + spec.name + "': " + field + " must be in [0, 1], got " +
                                  std::to_string(value));
    }
  }
  if (spec.nvlink_domain < 0) {
    throw std::invalid_argument("GpuSpec '" + spec.name + "': nvlink_domain must not be negative, got " +
                                std::to_string(spec.nvlink_domain));
  }
}

double power_limit(const GpuSpec& spec) {
  return spec.power_limit_watts > 0.0 ? spec.power_limit_watts : spec.tdp_watts;
}

double clock_factor(const GpuSpec& spec) {
  if (!(spec.tdp_watts > 0.0)) return 1.0;
  return std::min(1.0, std::pow(power_limit(spec) / spec.tdp_watts, kClockPowerExponent));
}

double sustained_ratio(const GpuSpec& spec, const StepKernelMix& mix) {
  const double compute = mix.gemm + mix.fp8_gemm + mix.attention;
  if (!(spec.sustained_gemm > 0.0) || !(compute > 0.0)) return 1.0;
  const double b = 1.0 / kClockPowerExponent;
  auto demand = [&](double sustained) {
    return std::pow(sustained > 0.0 ? sustained : spec.sustained_gemm, -b);
  };
  const double weighted = mix.gemm * demand(spec.sustained_gemm) +
                          mix.fp8_gemm * demand(spec.sustained_fp8_gemm) +
                          mix.attention * demand(spec.sustained_attention);
  // Average power over the limit at ratio s; increasing in s, so bisect for its root.
  auto excess = [&](double s) {
    return weighted * std::pow(s, b - 1.0) + mix.memory * spec.memory_power - (compute / s + mix.memory);
  };
  if (excess(1.0) <= 0.0) return 1.0;
  double lo = 0.05, hi = 1.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (excess(mid) > 0.0 ? hi : lo) = mid;
  }
  return 0.5 * (lo + hi);
}

GpuSpec custom_gpu(std::string name, double bf16_dense_flops, double fp8_dense_flops, double hbm_bytes,
                   double hbm_bytes_per_s, double nvlink_bytes_per_s, double tdp_watts, int sm_count,
                   double sm_clock_hz) {
  GpuSpec spec{std::move(name),
               bf16_dense_flops,
               fp8_dense_flops,
               hbm_bytes,
               hbm_bytes_per_s,
               nvlink_bytes_per_s,
               tdp_watts,
               sm_count,
               sm_clock_hz,
               fp8_dense_flops > bf16_dense_flops ? 1.0 : 0.0,
               fp8_dense_flops > bf16_dense_flops,
               1.0,
               "custom GPU: the H200 fit's efficiencies",
               0,
               90};
  validate(spec);
  return spec;
}

const GpuSpec* find_gpu(std::string_view name) {
  for (const GpuSpec& spec : catalog()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const GpuSpec& gpu(std::string_view name) {
  if (const GpuSpec* spec = find_gpu(name)) return *spec;
  std::string known;
  for (const GpuSpec& spec : catalog()) known += (known.empty() ? "" : ", ") + spec.name;
  throw std::invalid_argument("unknown GPU '" + std::string(name) + "'; known: " + known);
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  names.reserve(catalog().size());
  for (const GpuSpec& spec : catalog()) names.push_back(spec.name);
  return names;
}

}  // namespace ct::hardware
