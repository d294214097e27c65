// Young and Daly checkpoint intervals; the maths is in checkpoint_interval.h.
#include "models/reliability/checkpoint_interval.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ct::reliability {

namespace {
void check(double d, double m) {
  if (!(d > 0.0) || !std::isfinite(d)) {
    throw std::invalid_argument("training_job.checkpoint: the checkpoint save cost must be positive, got " +
                                std::to_string(d) + " s");
  }
  if (!(m > 0.0)) {
    throw std::invalid_argument("failures.node_failure_rate_per_day: the job MTBF must be positive, got " +
                                std::to_string(m) + " s");
  }
}
}  // namespace

double young_interval_s(double d, double m) {
  check(d, m);
  if (std::isinf(m)) return std::numeric_limits<double>::infinity();
  return std::sqrt(2.0 * d * m);
}

double daly_interval_s(double d, double m) {
  check(d, m);
  if (std::isinf(m)) return std::numeric_limits<double>::infinity();
  if (d >= 2.0 * m) return m;
  return std::sqrt(2.0 * d * m) * (1.0 + std::sqrt(d / (2.0 * m)) / 3.0 + d / (18.0 * m)) - d;
}

}  // namespace ct::reliability
