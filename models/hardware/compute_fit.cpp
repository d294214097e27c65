// Maths: see compute_fit.h.
#include "models/hardware/compute_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

#include "models/hardware/nelder_mead.h"

namespace ct::hardware {
namespace {

double logit(double p) { return std::log(p / (1.0 - p)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// Fractions are kept below 1 so the calibration stays valid at the boundary.
double fraction_of(double x) { return 0.999 * sigmoid(x); }
double log_ratio(double model_s, double measured_s) { return std::log(model_s / measured_s); }

// Minimises f from x0 with restarts until the value stops improving.
std::vector<double> minimise(const std::function<double(const std::vector<double>&)>& f,
                             std::vector<double> x0) {
  MinimizeResult best = nelder_mead(f, std::move(x0), 0.5);
  for (int restart = 0; restart < 20; ++restart) {
    MinimizeResult next = nelder_mead(f, best.x, restart % 2 == 0 ? 0.3 : 0.05);
    const bool improved = next.value < best.value * (1.0 - 1e-9);
    if (next.value < best.value) best = std::move(next);
    if (!improved) break;
  }
  return best.x;
}

double gemm_objective(const ComputeModel& model, const KernelMeasurements& data) {
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < data.gemm.size(); ++i) {
    if (is_held_out(i)) continue;
    const GemmSample& g = data.gemm[i];
    const double r = log_ratio(model.gemm_time(g.m, g.n, g.k, g.count).seconds(), g.seconds);
    sum += r * r;
    ++n;
  }
  return sum / static_cast<double>(n);
}

double attention_objective(const ComputeModel& model, const KernelMeasurements& data) {
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < data.attention.size(); ++i) {
    if (is_held_out(i)) continue;
    const AttentionSample& a = data.attention[i];
    const double rf = log_ratio(
        model.attention_time(a.batch, a.heads, a.seq, a.head_dim, true, AttentionPass::forward).seconds(),
        a.fwd_seconds);
    const double rb = log_ratio(
        model.attention_time(a.batch, a.heads, a.seq, a.head_dim, true, AttentionPass::forward_backward)
            .seconds(),
        a.fwdbwd_seconds);
    sum += rf * rf + rb * rb;
    n += 2;
  }
  return sum / static_cast<double>(n);
}

double elementwise_objective(const ComputeModel& model, const KernelMeasurements& data) {
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < data.elementwise.size(); ++i) {
    if (is_held_out(i)) continue;
    const ElementwiseSample& e = data.elementwise[i];
    const double r =
        log_ratio(model.elementwise_time(ct::sim::Bytes{e.bytes_moved}, e.op_class).seconds(), e.seconds);
    sum += r * r;
    ++n;
  }
  return sum / static_cast<double>(n);
}

// Objective of a candidate calibration; invalid parameters score +inf.
double score(const GpuSpec& gpu, const Calibration& cal,
             double (*objective)(const ComputeModel&, const KernelMeasurements&),
             const KernelMeasurements& data) {
  try {
    return objective(ComputeModel(gpu, cal), data);
  } catch (const std::invalid_argument&) {
    return INFINITY;
  }
}

// A starting calibration: plausible magnitudes, not fitted.
Calibration initial_guess() {
  Calibration c;
  c.gemm = {2e-5, 3.0, 0.8, 300.0, 0.5, 1e14, 0.2, 0.7, 128, 256};
  c.attention = {2e-5, 1.5, 0.7, 500.0, 0.6, 2000.0};
  c.elementwise.overlap_p = 2.5;
  c.elementwise.streaming = {1e-5, 0.8};
  c.elementwise.normalization = {1e-5, 0.6};
  c.elementwise.softmax = {1e-5, 0.3};
  return c;
}

void fit_gemm(Calibration& cal, const KernelMeasurements& data, const GpuSpec& gpu) {
  auto apply = [](Calibration c, const std::vector<double>& x) {
    c.gemm.launch_s = std::exp(x[0]);
    c.gemm.overlap_p = 1.0 + std::exp(x[1]);
    c.gemm.eff_max = fraction_of(x[2]);
    c.gemm.k_half = std::exp(x[3]);
    c.gemm.wave_gamma = fraction_of(x[4]);
    c.gemm.throttle_flops = std::exp(x[5]);
    c.gemm.throttle_delta = fraction_of(x[6]);
    c.gemm.mem_eff = fraction_of(x[7]);
    return c;
  };
  const Calibration::Gemm& g = cal.gemm;
  const std::vector<double> x0 = {std::log(g.launch_s),
                                  std::log(g.overlap_p - 1.0),
                                  logit(g.eff_max / 0.999),
                                  std::log(g.k_half),
                                  logit(g.wave_gamma / 0.999),
                                  std::log(g.throttle_flops),
                                  logit(g.throttle_delta / 0.999),
                                  logit(g.mem_eff / 0.999)};
  constexpr std::array<std::pair<int, int>, 4> tiles{{{128, 256}, {256, 128}, {128, 128}, {64, 256}}};
  double best_value = INFINITY;
  Calibration best = cal;
  for (const auto& [tm, tn] : tiles) {
    Calibration base = cal;
    base.gemm.tile_m = tm;
    base.gemm.tile_n = tn;
    const auto f = [&](const std::vector<double>& x) {
      return score(gpu, apply(base, x), gemm_objective, data);
    };
    const std::vector<double> x = minimise(f, x0);
    const double value = f(x);
    if (value < best_value) best_value = value, best = apply(base, x);
  }
  cal = best;
}

void fit_attention(Calibration& cal, const KernelMeasurements& data, const GpuSpec& gpu) {
  auto apply = [](Calibration c, const std::vector<double>& x) {
    c.attention.launch_s = std::exp(x[0]);
    c.attention.overlap_p = 1.0 + std::exp(x[1]);
    c.attention.fwd_eff_max = fraction_of(x[2]);
    c.attention.fwd_seq_half = std::exp(x[3]);
    c.attention.bwd_eff_max = fraction_of(x[4]);
    c.attention.bwd_seq_half = std::exp(x[5]);
    return c;
  };
  const Calibration::Attention& a = cal.attention;
  const std::vector<double> x0 = {std::log(a.launch_s),         std::log(a.overlap_p - 1.0),
                                  logit(a.fwd_eff_max / 0.999), std::log(a.fwd_seq_half),
                                  logit(a.bwd_eff_max / 0.999), std::log(a.bwd_seq_half)};
  const auto f = [&](const std::vector<double>& x) {
    return score(gpu, apply(cal, x), attention_objective, data);
  };
  cal = apply(cal, minimise(f, x0));
}

void fit_elementwise(Calibration& cal, const KernelMeasurements& data, const GpuSpec& gpu) {
  auto apply = [](Calibration c, const std::vector<double>& x) {
    c.elementwise.overlap_p = 1.0 + std::exp(x[0]);
    c.elementwise.streaming = {std::exp(x[1]), fraction_of(x[2])};
    c.elementwise.normalization = {std::exp(x[3]), fraction_of(x[4])};
    c.elementwise.softmax = {std::exp(x[5]), fraction_of(x[6])};
    return c;
  };
  const Calibration::Elementwise& e = cal.elementwise;
  const std::vector<double> x0 = {std::log(e.overlap_p - 1.0),        std::log(e.streaming.launch_s),
                                  logit(e.streaming.eff / 0.999),     std::log(e.normalization.launch_s),
                                  logit(e.normalization.eff / 0.999), std::log(e.softmax.launch_s),
                                  logit(e.softmax.eff / 0.999)};
  const auto f = [&](const std::vector<double>& x) {
    return score(gpu, apply(cal, x), elementwise_objective, data);
  };
  cal = apply(cal, minimise(f, x0));
}

ErrorStats stats(std::vector<double> errors) {
  ErrorStats s;
  s.count = errors.size();
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  double sum = 0.0;
  for (double e : errors) sum += e;
  s.mean = sum / static_cast<double>(errors.size());
  const std::size_t h = errors.size() / 2;
  s.median = errors.size() % 2 == 1 ? errors[h] : 0.5 * (errors[h - 1] + errors[h]);
  s.max = errors.back();
  return s;
}

struct Collector {
  std::vector<double> fit, holdout;
  void add(std::size_t index, double model_s, double measured_s) {
    (is_held_out(index) ? holdout : fit).push_back(std::abs(model_s - measured_s) / measured_s);
  }
  [[nodiscard]] FamilyErrors result() const { return {stats(fit), stats(holdout)}; }
};

}  // namespace

bool is_held_out(std::size_t index) { return (index + index / 4) % 4 == 3; }

Calibration fit_calibration(const KernelMeasurements& data, const GpuSpec& measured_gpu) {
  Calibration cal = initial_guess();
  fit_gemm(cal, data, measured_gpu);
  fit_attention(cal, data, measured_gpu);
  fit_elementwise(cal, data, measured_gpu);
  return cal;
}

Calibration fit_calibration_from(const KernelMeasurements& data, const GpuSpec& measured_gpu,
                                 const Calibration& start) {
  validate(start);
  Calibration cal = start;
  if (!data.gemm.empty()) fit_gemm(cal, data, measured_gpu);
  if (!data.attention.empty()) fit_attention(cal, data, measured_gpu);
  if (!data.elementwise.empty()) fit_elementwise(cal, data, measured_gpu);
  return cal;
}

FitObjectives fit_objectives(const ComputeModel& model, const KernelMeasurements& data) {
  return {gemm_objective(model, data), attention_objective(model, data), elementwise_objective(model, data)};
}

ErrorTable evaluate_errors(const ComputeModel& model, const KernelMeasurements& data) {
  Collector gemm, gemm_large, fwd, fwdbwd, elementwise;
  for (std::size_t i = 0; i < data.gemm.size(); ++i) {
    const GemmSample& g = data.gemm[i];
    const double t = model.gemm_time(g.m, g.n, g.k, g.count).seconds();
    gemm.add(i, t, g.seconds);
    const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                         static_cast<double>(g.k) * static_cast<double>(g.count);
    if (flops >= 1e11) gemm_large.add(i, t, g.seconds);
  }
  for (std::size_t i = 0; i < data.attention.size(); ++i) {
    const AttentionSample& a = data.attention[i];
    fwd.add(i,
            model.attention_time(a.batch, a.heads, a.seq, a.head_dim, true, AttentionPass::forward).seconds(),
            a.fwd_seconds);
    fwdbwd.add(
        i,
        model.attention_time(a.batch, a.heads, a.seq, a.head_dim, true, AttentionPass::forward_backward)
            .seconds(),
        a.fwdbwd_seconds);
  }
  for (std::size_t i = 0; i < data.elementwise.size(); ++i) {
    const ElementwiseSample& e = data.elementwise[i];
    elementwise.add(i, model.elementwise_time(ct::sim::Bytes{e.bytes_moved}, e.op_class).seconds(),
                    e.seconds);
  }
  return {gemm.result(), gemm_large.result(), fwd.result(), fwdbwd.result(), elementwise.result()};
}

std::string format_error_table(const ErrorTable& table) {
  std::string out =
      "| family | set | n | mean abs rel err | median | max |\n"
      "| --- | --- | ---: | ---: | ---: | ---: |\n";
  const std::array<std::pair<const char*, const FamilyErrors*>, 5> rows{{
      {"gemm (all)", &table.gemm},
      {"gemm (>= 1e11 FLOP)", &table.gemm_large},
      {"attention fwd", &table.attention_fwd},
      {"attention fwd+bwd", &table.attention_fwdbwd},
      {"elementwise", &table.elementwise},
  }};
  char line[160];
  for (const auto& [name, fam] : rows) {
    for (const auto& [set, s] : {std::pair{"fit", &fam->fit}, std::pair{"hold-out", &fam->holdout}}) {
      std::snprintf(line, sizeof line, "| %s | %s | %zu | %.1f%% | %.1f%% | %.1f%% |\n", name, set, s->count,
                    100.0 * s->mean, 100.0 * s->median, 100.0 * s->max);
      out += line;
    }
  }
  return out;
}

std::string format_calibration(const Calibration& cal) {
  char buf[1400];
  const auto& g = cal.gemm;
  const auto& a = cal.attention;
  const auto& e = cal.elementwise;
  std::snprintf(buf, sizeof buf,
                "  c.gemm.launch_s = %.17g;\n  c.gemm.overlap_p = %.17g;\n"
                "  c.gemm.eff_max = %.17g;\n  c.gemm.k_half = %.17g;\n"
                "  c.gemm.wave_gamma = %.17g;\n  c.gemm.throttle_flops = %.17g;\n"
                "  c.gemm.throttle_delta = %.17g;\n  c.gemm.mem_eff = %.17g;\n"
                "  c.gemm.tile_m = %d;\n  c.gemm.tile_n = %d;\n"
                "  c.attention.launch_s = %.17g;\n  c.attention.overlap_p = %.17g;\n"
                "  c.attention.fwd_eff_max = %.17g;\n  c.attention.fwd_seq_half = %.17g;\n"
                "  c.attention.bwd_eff_max = %.17g;\n  c.attention.bwd_seq_half = %.17g;\n"
                "  c.elementwise.overlap_p = %.17g;\n"
                "  c.elementwise.streaming = {%.17g, %.17g};\n"
                "  c.elementwise.normalization = {%.17g, %.17g};\n"
                "  c.elementwise.softmax = {%.17g, %.17g};\n",
                g.launch_s, g.overlap_p, g.eff_max, g.k_half, g.wave_gamma, g.throttle_flops,
                g.throttle_delta, g.mem_eff, g.tile_m, g.tile_n, a.launch_s, a.overlap_p, a.fwd_eff_max,
                a.fwd_seq_half, a.bwd_eff_max, a.bwd_seq_half, e.overlap_p, e.streaming.launch_s,
                e.streaming.eff, e.normalization.launch_s, e.normalization.eff, e.softmax.launch_s,
                e.softmax.eff);
  return buf;
}

}  // namespace ct::hardware
