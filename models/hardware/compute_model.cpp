// Maths: see compute_model.h (p-norm of launch floor and roofline terms, with shape-dependent
// efficiencies).
#include "models/hardware/compute_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace ct::hardware {
namespace {

// (a^p + b^p + c^p)^(1/p), computed relative to the largest term so it cannot overflow.
double soft_max(double p, double a, double b, double c = 0.0) {
  const double top = std::max(a, std::max(b, c));
  if (top <= 0.0) return 0.0;
  const double sum = std::pow(a / top, p) + std::pow(b / top, p) + std::pow(c / top, p);
  return top * std::pow(sum, 1.0 / p);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void require_positive(int64_t value, const char* what) {
  if (value <= 0) {
    throw std::invalid_argument(std::string(what) + " must be positive, got " + std::to_string(value));
  }
}

void require_param(bool ok, const char* name) {
  if (!ok) throw std::invalid_argument(std::string("Calibration: ") + name + " out of range");
}

bool positive(double v) { return std::isfinite(v) && v > 0.0; }
bool fraction(double v) { return std::isfinite(v) && v > 0.0 && v <= 1.0; }
bool exponent(double v) { return std::isfinite(v) && v >= 1.0; }

const Calibration::MemoryClass& memory_class(const Calibration::Elementwise& e, MemoryOp op) {
  switch (op) {
    case MemoryOp::normalization:
      return e.normalization;
    case MemoryOp::softmax:
      return e.softmax;
    case MemoryOp::streaming:
      break;
  }
  return e.streaming;
}

}  // namespace

void validate(const Calibration& cal) {
  const auto& g = cal.gemm;
  require_param(positive(g.launch_s), "gemm.launch_s");
  require_param(exponent(g.overlap_p), "gemm.overlap_p (>= 1)");
  require_param(fraction(g.eff_max), "gemm.eff_max (0, 1]");
  require_param(std::isfinite(g.k_half) && g.k_half >= 0.0, "gemm.k_half (>= 0)");
  require_param(std::isfinite(g.wave_gamma) && g.wave_gamma >= 0.0 && g.wave_gamma <= 1.0,
                "gemm.wave_gamma [0, 1]");
  require_param(positive(g.throttle_flops), "gemm.throttle_flops");
  require_param(std::isfinite(g.throttle_delta) && g.throttle_delta >= 0.0 && g.throttle_delta < 1.0,
                "gemm.throttle_delta [0, 1)");
  require_param(fraction(g.mem_eff), "gemm.mem_eff (0, 1]");
  require_param(g.tile_m > 0 && g.tile_n > 0, "gemm.tile_m/tile_n");
  const auto& a = cal.attention;
  require_param(positive(a.launch_s), "attention.launch_s");
  require_param(exponent(a.overlap_p), "attention.overlap_p (>= 1)");
  require_param(fraction(a.fwd_eff_max), "attention.fwd_eff_max (0, 1]");
  require_param(std::isfinite(a.fwd_seq_half) && a.fwd_seq_half >= 0.0, "attention.fwd_seq_half");
  require_param(fraction(a.bwd_eff_max), "attention.bwd_eff_max (0, 1]");
  require_param(std::isfinite(a.bwd_seq_half) && a.bwd_seq_half >= 0.0, "attention.bwd_seq_half");
  const auto& e = cal.elementwise;
  require_param(exponent(e.overlap_p), "elementwise.overlap_p (>= 1)");
  for (const auto* c : {&e.streaming, &e.normalization, &e.softmax}) {
    require_param(positive(c->launch_s), "elementwise.<class>.launch_s");
    require_param(fraction(c->eff), "elementwise.<class>.eff (0, 1]");
  }
}

ComputeModel::ComputeModel(GpuSpec gpu, Calibration cal) : gpu_(std::move(gpu)), cal_(std::move(cal)) {
  ct::hardware::validate(gpu_);
  ct::hardware::validate(cal_);
}

double ComputeModel::gemm_efficiency(int64_t m, int64_t n, int64_t k, int64_t count) const {
  require_positive(m, "gemm M");
  require_positive(n, "gemm N");
  require_positive(k, "gemm K");
  require_positive(count, "gemm count");
  const auto& g = cal_.gemm;
  const double md = static_cast<double>(m), nd = static_cast<double>(n);
  const double kd = static_cast<double>(k), cd = static_cast<double>(count);
  const int64_t tiles = ceil_div(m, g.tile_m) * ceil_div(n, g.tile_n) * count;
  const int64_t waves = ceil_div(tiles, gpu_.sm_count);
  const double slots = static_cast<double>(waves) * gpu_.sm_count * g.tile_m * g.tile_n;
  const double util = md * nd * cd / slots;
  const double flops = 2.0 * md * nd * kd * cd;
  // gemm_eff_scale: this GPU's measured best-shape efficiency relative to the fitted silicon's
  // (gpu_catalog.cpp); a fit through this same spec (calibrate) gets it back out.
  const double e_max = std::min(1.0, g.eff_max * gpu_.gemm_eff_scale);
  const double throttle =
      steady_ > 0.0 ? steady_ : 1.0 - g.throttle_delta * flops / (flops + g.throttle_flops);
  return e_max * std::pow(util, g.wave_gamma) * kd / (kd + g.k_half) * throttle;
}

void ComputeModel::set_steady(double ratio) {
  if (!std::isfinite(ratio) || ratio < 0.0 || ratio > 1.0) {
    throw std::invalid_argument("steady compute ratio must be in [0, 1], got " + std::to_string(ratio));
  }
  steady_ = ratio;
}

ct::sim::Duration ComputeModel::gemm_time(int64_t m, int64_t n, int64_t k, int64_t count, bool fp8, bool mx,
                                          bool fp4) const {
  if (fp8 && !(gpu_.fp8_gemm_ratio > 0.0)) {
    throw std::invalid_argument("FP8 GEMM on " + gpu_.name + ", which has no FP8 tensor cores");
  }
  if (mx && gpu_.sm_arch < 100) {
    throw std::invalid_argument("MXFP8 GEMM on " + gpu_.name +
                                ", which has no block-scaled FP8 (Blackwell and later)");
  }
  if (fp4 && !(gpu_.fp4_dense_flops > 0.0 && gpu_.fp8_gemm_ratio > 0.0)) {
    throw std::invalid_argument("NVFP4 GEMM on " + gpu_.name +
                                ", which has no FP4 tensor cores (Blackwell and later)");
  }
  const double eff = gemm_efficiency(m, n, k, count);
  const auto& g = cal_.gemm;
  const double md = static_cast<double>(m), nd = static_cast<double>(n);
  const double kd = static_cast<double>(k), cd = static_cast<double>(count);
  const double peak = (fp4   ? gpu_.fp4_dense_flops * gpu_.fp8_gemm_ratio * kMxfp8KernelRatio
                       : fp8 ? gpu_.fp8_dense_flops * gpu_.fp8_gemm_ratio * (mx ? kMxfp8KernelRatio : 1.0)
                             : gpu_.bf16_dense_flops) *
                      clock_factor(gpu_);
  const double t_compute = 2.0 * md * nd * kd * cd / (peak * eff);
  const double in_bytes = fp4 ? 0.5 + 1.0 / 16.0 : fp8 ? 1.0 : 2.0;
  const double bytes = (in_bytes * (md * kd + kd * nd) + 2.0 * md * nd) * cd;
  const double t_memory = bytes / (gpu_.hbm_bytes_per_s * g.mem_eff);
  return ct::sim::Duration::from_seconds(soft_max(g.overlap_p, g.launch_s, t_compute, t_memory));
}

ct::sim::Duration ComputeModel::attention_time(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim,
                                               bool causal, AttentionPass pass, int64_t seq_kv,
                                               int64_t window) const {
  require_positive(batch, "attention batch");
  require_positive(heads, "attention heads");
  require_positive(seq, "attention seq");
  require_positive(head_dim, "attention head_dim");
  if (window < 0)
    throw std::invalid_argument("attention window must not be negative, got " + std::to_string(window));
  const auto& a = cal_.attention;
  const double s = static_cast<double>(seq);
  const double kv = seq_kv > 0 ? static_cast<double>(seq_kv) : s;
  const double full =
      4.0 * static_cast<double>(batch) * static_cast<double>(heads) * s * kv * static_cast<double>(head_dim);
  double f_fwd = causal ? full / 2.0 : full;
  double s_eff = causal ? s : 2.0 * s;
  if (window > 0 && causal && static_cast<double>(window) < kv) {
    // The band of a causal window over the whole sequence (kv keys), this rank's seq / kv share.
    const double w = static_cast<double>(window);
    const double pairs = w * kv - w * (w - 1.0) / 2.0;
    f_fwd = 4.0 * static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(head_dim) *
            pairs * (s / kv);
    s_eff = std::min(s_eff, 2.0 * w);
  }
  // attention_*_scale: this GPU's measured flash-attention efficiency relative to the fitted
  // silicon's (gpu_catalog.cpp); 1 for Hopper.
  const double eff_fwd =
      std::min(1.0, a.fwd_eff_max * gpu_.attention_fwd_scale) * s_eff / (s_eff + a.fwd_seq_half);
  const double peak = gpu_.bf16_dense_flops * clock_factor(gpu_) * (steady_ > 0.0 ? steady_ : 1.0);
  double t = soft_max(a.overlap_p, a.launch_s, f_fwd / (peak * eff_fwd));
  if (pass == AttentionPass::forward_backward) {
    const double eff_bwd =
        std::min(1.0, a.bwd_eff_max * gpu_.attention_bwd_scale) * s_eff / (s_eff + a.bwd_seq_half);
    t += soft_max(a.overlap_p, a.launch_s, 2.5 * f_fwd / (peak * eff_bwd));
  }
  return ct::sim::Duration::from_seconds(t);
}

ct::sim::Duration ComputeModel::elementwise_time(ct::sim::Bytes bytes_moved, MemoryOp op) const {
  if (bytes_moved.n < 0) {
    throw std::invalid_argument("elementwise bytes_moved must not be negative, got " +
                                std::to_string(bytes_moved.n));
  }
  const auto& c = memory_class(cal_.elementwise, op);
  const double t_memory = bytes_moved.as_double() / (gpu_.hbm_bytes_per_s * c.eff);
  return ct::sim::Duration::from_seconds(soft_max(cal_.elementwise.overlap_p, c.launch_s, t_memory));
}

}  // namespace ct::hardware
