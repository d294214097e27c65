// Renewal-reward goodput and its golden-section optimum; the maths is in goodput.h.
#include "models/reliability/goodput.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ct::reliability {

namespace {
void check(double save_s, double recovery_s, double mtbf_s) {
  if (!(save_s >= 0.0) || !std::isfinite(save_s)) {
    throw std::invalid_argument("training_job.checkpoint: the checkpoint save cost must be >= 0, got " +
                                std::to_string(save_s) + " s");
  }
  if (!(recovery_s >= 0.0) || !std::isfinite(recovery_s)) {
    throw std::invalid_argument("recovery.restart: the recovery time must be >= 0, got " +
                                std::to_string(recovery_s) + " s");
  }
  if (!(mtbf_s > 0.0)) {
    throw std::invalid_argument("failures.node_failure_rate_per_day: the job MTBF must be positive, got " +
                                std::to_string(mtbf_s) + " s");
  }
}
}  // namespace

double expected_goodput(double interval_s, double save_s, double recovery_s, double mtbf_s) {
  if (!(interval_s > 0.0) || !std::isfinite(interval_s)) {
    throw std::invalid_argument("training_job.checkpoint.interval must be positive, got " +
                                std::to_string(interval_s) + " s");
  }
  check(save_s, recovery_s, mtbf_s);
  if (std::isinf(mtbf_s)) return interval_s / (interval_s + save_s);
  const double lambda = 1.0 / mtbf_s;
  return lambda * interval_s * std::exp(-lambda * recovery_s) / std::expm1(lambda * (interval_s + save_s));
}

double optimal_interval_s(double save_s, double mtbf_s) {
  check(save_s, 0.0, mtbf_s);
  if (std::isinf(mtbf_s)) return std::numeric_limits<double>::infinity();
  if (save_s == 0.0) return 0.0;  // free checkpoints: checkpoint continuously
  const double inv_phi = (std::sqrt(5.0) - 1.0) / 2.0;
  auto g = [&](double log_tau) { return expected_goodput(std::exp(log_tau), save_s, 0.0, mtbf_s); };
  double a = std::log(mtbf_s * 1e-12);
  double b = std::log(mtbf_s);
  double c = b - inv_phi * (b - a);
  double d = a + inv_phi * (b - a);
  double gc = g(c);
  double gd = g(d);
  while (b - a > 1e-10) {  // an absolute width in log tau is a relative width in tau
    if (gc >= gd) {
      b = d;
      d = c;
      gd = gc;
      c = b - inv_phi * (b - a);
      gc = g(c);
    } else {
      a = c;
      c = d;
      gc = gd;
      d = a + inv_phi * (b - a);
      gd = g(d);
    }
  }
  return std::exp(0.5 * (a + b));
}

}  // namespace ct::reliability
