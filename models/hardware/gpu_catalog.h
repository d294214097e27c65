// GPU catalog: datasheet figures of the accelerators a scenario may name, and validation of a
// GpuSpec a scenario builds with its own numbers.
//
// Units are SI base units in doubles: FLOP/s, bytes, bytes/s, watts, hertz. FLOP/s figures are
// dense (no 2:4 sparsity). NVLink bandwidth is per GPU, per direction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ct::hardware {

struct GpuSpec {
  std::string name;
  double bf16_dense_flops = 0.0;    // FLOP/s, dense bf16 tensor core peak
  double fp8_dense_flops = 0.0;     // FLOP/s, dense fp8 tensor core peak (bf16 rate if no FP8)
  double hbm_bytes = 0.0;           // bytes of HBM
  double hbm_bytes_per_s = 0.0;     // HBM bandwidth, bytes/s
  double nvlink_bytes_per_s = 0.0;  // per GPU, unidirectional, bytes/s
  double tdp_watts = 0.0;           // rated board power, W: the datasheet peaks hold at it
  int sm_count = 0;                 // streaming multiprocessors
  double sm_clock_hz = 0.0;         // maximum boost SM clock, Hz
  // Achievable FP8 GEMM efficiency relative to BF16 (both as fractions of their own dense
  // peaks), from measured best-shape matmuls (gpu_catalog.cpp); 0 = no FP8 tensor cores.
  double fp8_gemm_ratio = 0.0;
  // True when fp8_gemm_ratio is carried over from another GPU of the same silicon.
  bool fp8_ratio_extrapolated = false;
  // Achievable BF16 GEMM efficiency of this GPU relative to the Hopper silicon the compute
  // model is fitted on (H200 kernels): the measured best-shape matmul efficiency of this GPU
  // over H100 SXM's (MAMF table, gpu_catalog.cpp). Scales the fitted e_max; 1 for Hopper.
  double gemm_eff_scale = 1.0;
  // Where gemm_eff_scale comes from, for the report's assumptions ("" = Hopper, measured).
  std::string gemm_eff_basis;
  // GPUs sharing one NVLink switch domain in the system this part ships in (GB200/GB300
  // NVL72: 72 across 18 trays); 0 = the node (HGX/DGX: 8).
  int nvlink_domain = 0;
  // CUDA compute capability x 10 (A100 80, Hopper 90, Blackwell 100): selects NCCL's
  // per-architecture tuning constants (models/collective/nccl_tuning.h) and whether NVLink
  // SHARP (NVLS, Hopper and later with NVSwitch) exists.
  int sm_arch = 90;
  // Board power limit the GPU runs at (nvidia-smi -pl), W; 0 = tdp_watts. Below the rated
  // power the tensor-core clock falls: clock_factor(). Never above tdp_watts (validate).
  double power_limit_watts = 0.0;
  // GPU <-> host memory bandwidth per direction, bytes/s, for activation offloading; 0 = the
  // node's PCIe path (cluster.pcie: HGX parts hang off PCIe Gen5 x16). GB200/GB300 reach their
  // Grace CPU over NVLink-C2C instead (gpu_catalog.cpp).
  double host_link_bytes_per_s = 0.0;
  // The GPU's PCIe path to its NIC, per direction, bytes/s (cluster.pcie 0 takes it): its PCIe
  // generation at x16 (gpu_catalog.cpp).
  double pcie_bytes_per_s = 0.0;
  // Flash-attention efficiency (forward, backward) of this GPU relative to the Hopper silicon
  // the compute model is fitted on: the same cuDNN SDPA benchmark's fraction of peak on this
  // GPU over H200's (gpu_catalog.cpp). Scale the fitted e_fwd / e_bwd; 1 for Hopper.
  double attention_fwd_scale = 1.0;
  double attention_bwd_scale = 1.0;
  // Where the attention scales come from ("" = Hopper, measured; else the source, or that
  // nothing was measured and H200's efficiencies are assumed).
  std::string attention_basis{};
  // Steady state under the power limit (sustained_ratio() below): tensor-core throughput of
  // back-to-back large bf16 GEMMs and of back-to-back flash attention, each relative to the
  // same kernel timed in a short burst (as the calibration is), and the power a memory-bound
  // stream draws at full speed as a fraction of the limit. 0 = not measured on this GPU: the
  // calibration's per-kernel throttle term (compute_model.h) stands in.
  double sustained_gemm = 0.0;
  double sustained_fp8_gemm = 0.0;  // FP8 GEMMs, 0 = sustained_gemm's
  double sustained_attention = 0.0;
  double memory_power = 0.0;
  std::string sustained_basis{};
  // FLOP/s, dense FP4 (NVFP4, E2M1 with E4M3 block scales) tensor-core peak; 0 = no FP4
  // tensor cores (before Blackwell). No FP4 GEMM is measured here: NVFP4 GEMMs run at this
  // peak times the FP8 block-scaled efficiency (compute_model.h), flagged in every report.
  double fp4_dense_flops = 0.0;
};

// Exponent of power in throughput for compute-bound work, 1 / kClockPowerExponent (below).
// sustained_ratio(): in a training step the kernels run back to back for seconds, so the
// board sits at its power limit and every compute-bound kernel runs at one steady clock, not
// at the speed it shows alone in a burst. With t_c the time a step spends in class c (bf16
// GEMMs, FP8 GEMMs, attention, memory-bound kernels) at burst speed, the steady throughput
// ratio s of compute-bound kernels is the largest s <= 1 whose average power stays at the
// limit:
//   [ sum_compute t_c d_c s^(b-1) + t_memory m ] / [ sum_compute t_c / s + t_memory ] = 1,
//   d_c = sustained_c^(-b) (the class's demand at burst speed, from its own back-to-back
//   ratio), m = memory_power, b = 1 / kClockPowerExponent.
// Memory-bound kernels keep their speed (the HBM clock is not power-managed). 1 when the GPU
// has no steady-state measurement (sustained_gemm == 0) or the step stays under the limit.
struct StepKernelMix {
  double gemm = 0.0, fp8_gemm = 0.0, attention = 0.0, memory = 0.0;  // seconds at burst speed
};
[[nodiscard]] double sustained_ratio(const GpuSpec& spec, const StepKernelMix& mix);

// Sustained tensor-core clock under the power limit, relative to the clock the datasheet
// peaks assume: (limit / tdp)^kClockPowerExponent, 1 at the rated power. Dynamic CMOS power
// is C V^2 f with V rising with f, so f grows as about the cube root of power; the exponent
// is measured on one die at two rated powers: GH100 with 132 SMs as H100 NVL (400 W, 835 TFLOP/s
// dense BF16) and H100 SXM (700 W, 989 TFLOP/s), ln(835/989) / ln(400/700) = 0.303 (NVIDIA
// H100 datasheet, 2023). Compute-bound kernel times divide by it; HBM and launch floors keep
// their speed (the memory clock is not power-managed).
inline constexpr double kClockPowerExponent = 0.303;
[[nodiscard]] double clock_factor(const GpuSpec& spec);
// The power limit in effect: power_limit_watts, or tdp_watts when it is 0.
[[nodiscard]] double power_limit(const GpuSpec& spec);

// Throws std::invalid_argument naming the first field that is not a finite positive number
// (or an empty name).
void validate(const GpuSpec& spec);

// A GpuSpec with the scenario's own numbers, validated.
GpuSpec custom_gpu(std::string name, double bf16_dense_flops, double fp8_dense_flops, double hbm_bytes,
                   double hbm_bytes_per_s, double nvlink_bytes_per_s, double tdp_watts, int sm_count,
                   double sm_clock_hz);

// The catalog entry with this exact name, or nullptr.
const GpuSpec* find_gpu(std::string_view name);

// Like find_gpu, but throws std::invalid_argument listing the known names.
const GpuSpec& gpu(std::string_view name);

// Names in the catalog, in catalog order.
std::vector<std::string> gpu_names();

}  // namespace ct::hardware
