// Fitting the compute model's Calibration to measured kernels, and its error table.
//
// Each family (GEMM, attention, element-wise) is fitted on its own by minimising the mean
// squared log error  (1/n) sum_i (ln t_model,i - ln t_measured,i)^2  over the fit set with
// Nelder–Mead, on unconstrained transforms of the parameters (log for positive ones, logit for
// fractions, log(p - 1) for exponents), restarted from its best point until it stops improving.
// GEMM tiles (tm, tn) are chosen from a small list by the same objective.
//
// Hold-out: entry i of each kernel list is held out of the fit when (i + i/4) % 4 == 3, i.e.
// one entry in four, rotating inside each group of four so that no op or head count of the
// calibration file (which cycle with period four) is held out entirely.
#pragma once

#include <cstddef>
#include <string>

#include "models/hardware/compute_model.h"
#include "models/hardware/kernel_data.h"

namespace ct::hardware {

bool is_held_out(std::size_t index);

Calibration fit_calibration(const KernelMeasurements& data, const GpuSpec& measured_gpu);

// The same fit started from `start` instead of the generic initial guess; a family without
// samples keeps start's parameters (fits to a few shapes, e.g. from one training trace).
Calibration fit_calibration_from(const KernelMeasurements& data, const GpuSpec& measured_gpu,
                                 const Calibration& start);

// Mean squared log error on the fit set, per family (attention counts fwd and fwd+bwd).
struct FitObjectives {
  double gemm = 0.0, attention = 0.0, elementwise = 0.0;
};
FitObjectives fit_objectives(const ComputeModel& model, const KernelMeasurements& data);

// Absolute relative error |t_model - t_measured| / t_measured.
struct ErrorStats {
  std::size_t count = 0;
  double mean = 0.0, median = 0.0, max = 0.0;
};
struct FamilyErrors {
  ErrorStats fit, holdout;
};
struct ErrorTable {
  FamilyErrors gemm;        // all GEMMs
  FamilyErrors gemm_large;  // GEMMs with 2MNK >= 1e11 FLOP (>= ~0.15 ms on H200)
  FamilyErrors attention_fwd;
  FamilyErrors attention_fwdbwd;
  FamilyErrors elementwise;
};
ErrorTable evaluate_errors(const ComputeModel& model, const KernelMeasurements& data);

std::string format_error_table(const ErrorTable& table);  // Markdown
std::string format_calibration(const Calibration& cal);   // C++ initialisers, full precision

}  // namespace ct::hardware
