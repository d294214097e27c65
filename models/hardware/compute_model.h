// Calibrated roofline for the three kernel families a training step is made of.
//
// Every kernel time is a smooth maximum (a p-norm) of a launch floor L and the roofline terms:
//
//   t = (L^p + t_compute^p + t_memory^p)^(1/p)          p >= 1 fitted per family
//
// p = 1 adds the terms (no overlap), p -> infinity is the plain roofline max.
//
// GEMM, C[M,N] = A[M,K] B[K,N], `count` independent problems in one launch (bf16):
//   F = 2 M N K count,  bytes = 2 (M K + K N + M N) count
//   tiles T = ceil(M/tm) ceil(N/tn) count, waves W = ceil(T / SMs)
//   u = M N count / (W SMs tm tn)           tile padding and last-wave tail, in (0, 1]
//   eff = e_max * u^gamma * K / (K + K_half) * (1 - delta F / (F + F_T))
//   t_compute = F / (peak_bf16 * eff),  t_memory = bytes / (hbm_bw * e_mem)
// gamma < 1 softens wave quantization (the library splits K or streams tiles); the last factor
// is the sustained-clock loss of long kernels (power/thermal throttling at 700 W): it falls
// from 1 for small F to 1 - delta for F >> F_T, so it cannot run away when extrapolating.
// Inside a training step (set_steady) the last factor is the step's steady ratio instead,
// for GEMMs and attention alike: the board is at its power limit whatever one kernel's length.
//
// Attention, scaled dot-product with q, k, v of shape [batch, heads, seq, head_dim] (bf16):
//   F_fwd = 4 b h s^2 d (halved when causal),  F_bwd = 2.5 F_fwd
//   s_eff = s if causal else 2 s            (keys visited per query tile grow with s_eff)
//   eff_fwd = e_fwd * s_eff / (s_eff + S_fwd),  eff_bwd = e_bwd * s_eff / (s_eff + S_bwd)
//   t_fwd = (L^p + (F_fwd / (peak eff_fwd))^p)^(1/p), t_bwd likewise; forward+backward = sum.
//   Only causal head_dim=128 shapes are measured: non-causal and other head_dims are
//   extrapolations (efficiency assumed independent of head_dim).
//
// Element-wise (memory-bound) kernels moving `bytes` (read + write), per op class k:
//   t = (L_k^p + (bytes / (hbm_bw * e_k))^p)^(1/p)
//
// Other GPUs: efficiencies are fractions of the GPU's own datasheet peaks, so compute terms
// scale with peak FLOP/s, memory terms with HBM bandwidth, wave quantization uses the GPU's SM
// count, and launch floors are kept as measured. A power limit below the rated board power
// (GpuSpec::power_limit_watts) multiplies the peak of every compute term (GEMM, attention)
// by clock_factor(gpu) (gpu_catalog.h); memory terms and launch floors are unchanged.
#pragma once

#include <cstdint>

#include "models/hardware/gpu_catalog.h"
#include "sim/units.h"

namespace ct::hardware {

enum class AttentionPass { forward, forward_backward };

// Memory-bound op classes, each with its own fitted floor and bandwidth efficiency.
enum class MemoryOp {
  streaming,      // copy, add, gelu, dropout, adam: one pass over the data
  normalization,  // layernorm, rmsnorm: a row reduction plus a pass
  softmax,        // row max, exp-sum, normalize
};

struct Calibration {
  struct Gemm {
    double launch_s = 0.0;        // L
    double overlap_p = 1.0;       // p
    double eff_max = 1.0;         // e_max
    double k_half = 0.0;          // K_half
    double wave_gamma = 1.0;      // gamma
    double throttle_flops = 1.0;  // F_T
    double throttle_delta = 0.0;  // delta, in [0, 1)
    double mem_eff = 1.0;         // e_mem
    int tile_m = 128;             // tm
    int tile_n = 256;             // tn
  } gemm;
  struct Attention {
    double launch_s = 0.0;
    double overlap_p = 1.0;
    double fwd_eff_max = 1.0;   // e_fwd
    double fwd_seq_half = 0.0;  // S_fwd
    double bwd_eff_max = 1.0;   // e_bwd
    double bwd_seq_half = 0.0;  // S_bwd
  } attention;
  struct MemoryClass {
    double launch_s = 0.0;  // L_k
    double eff = 1.0;       // e_k
  };
  struct Elementwise {
    double overlap_p = 1.0;
    MemoryClass streaming, normalization, softmax;
  } elementwise;

  // The parameters fitted on the H200 measurements in data/h200-kernels.json
  // (printed by ct_fit_compute; tests re-fit and compare).
  static Calibration h200();
};

// Throws std::invalid_argument naming the first parameter out of its domain.
void validate(const Calibration& cal);

// MXFP8 GEMM kernel throughput relative to per-tensor FP8 on the same Blackwell GPU: 2.68 vs
// 2.82 PFLOP/s in Transformer Engine's GEMM benchmark on B300 (5B-model shapes, kernels alone).
inline constexpr double kMxfp8KernelRatio = 2.68 / 2.82;

class ComputeModel {
 public:
  ComputeModel(GpuSpec gpu, Calibration cal);  // validates both

  // bf16 GEMM C[m,n] = A[m,k] B[k,n]; `count` same-shape problems in one batched launch.
  // fp8: A and B in FP8 (1 byte), C in bf16, at the FP8 peak times the GPU's measured FP8/BF16
  // efficiency ratio (gpu_catalog.h); the efficiency curve is the bf16 one (FP8 tiles are not
  // measured). Throws std::invalid_argument for a GPU without FP8 tensor cores.
  // mx: MXFP8 block-scaled FP8 (Blackwell, sm_arch >= 100): kMxfp8KernelRatio of the
  // per-tensor FP8 rate.
  // fp4 (with fp8): NVFP4, A and B in E2M1 with one E4M3 scale per 16 elements (0.5625 bytes),
  // at the GPU's dense FP4 peak times the same efficiency as an MXFP8 GEMM of the shape (the
  // FP8 ratio and kMxfp8KernelRatio: both are block-scaled kernels; no FP4 GEMM is measured
  // here, so this is extrapolated and every NVFP4 report says so). Throws
  // std::invalid_argument for a GPU without FP4 tensor cores.
  [[nodiscard]] ct::sim::Duration gemm_time(int64_t m, int64_t n, int64_t k, int64_t count = 1,
                                            bool fp8 = false, bool mx = false, bool fp4 = false) const;
  // bf16 scaled dot-product attention; backward alone = forward_backward - forward.
  // seq_kv: keys per query when they differ from seq (context parallelism: a rank's seq / cp
  // queries against all seq keys); 0 = seq. F = 4 b h seq seq_kv d, halved when causal (with
  // load-balanced causal CP every rank does 1/cp of the causal work).
  // window > 0: causal sliding-window attention (each query sees at most the last `window` keys,
  // itself included): F covers the band, w S - w (w - 1) / 2 query-key pairs of a sequence of S,
  // split like the causal work over CP ranks, and the kernel's efficiency is the causal one at
  // the sequence 2 min(w, S) whose mean band is as long (each query tile walks about w keys).
  [[nodiscard]] ct::sim::Duration attention_time(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim,
                                                 bool causal, AttentionPass pass, int64_t seq_kv = 0,
                                                 int64_t window = 0) const;
  // A memory-bound kernel moving bytes_moved (reads + writes).
  [[nodiscard]] ct::sim::Duration elementwise_time(ct::sim::Bytes bytes_moved,
                                                   MemoryOp op = MemoryOp::streaming) const;

  [[nodiscard]] double peak_flops() const { return gpu_.bf16_dense_flops; }  // FLOP/s
  [[nodiscard]] ct::sim::Bandwidth hbm_bandwidth() const {
    return ct::sim::Bandwidth::bytes_per_s(gpu_.hbm_bytes_per_s);
  }
  // Achieved fraction of peak of the compute term alone (no floor, no memory), for reports.
  [[nodiscard]] double gemm_efficiency(int64_t m, int64_t n, int64_t k, int64_t count = 1) const;

  [[nodiscard]] const GpuSpec& gpu() const { return gpu_; }
  [[nodiscard]] const Calibration& calibration() const { return cal_; }

  // Steady-state throughput ratio of compute-bound kernels in a training step (sustained_ratio,
  // gpu_catalog.h), in (0, 1]: every GEMM and attention kernel runs at it instead of the
  // calibration's per-kernel throttle term (which describes one kernel after idle). 0 = off
  // (kernel benchmarks, trace fits).
  void set_steady(double ratio);
  [[nodiscard]] double steady() const { return steady_; }

 private:
  GpuSpec gpu_;
  Calibration cal_;
  double steady_ = 0.0;
};

}  // namespace ct::hardware
