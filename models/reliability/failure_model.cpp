// Job failure rate and MTBF; the maths is in failure_model.h.
#include "models/reliability/failure_model.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace ct::reliability {

namespace {
void check_rate(double rate, const char* key) {
  if (!std::isfinite(rate) || rate < 0.0) {
    throw std::invalid_argument(std::string(key) + " must be a finite rate >= 0, got " +
                                std::to_string(rate));
  }
}
}  // namespace

FailureDistribution parse_failure_distribution(const std::string& name) {
  if (name == "exponential") return FailureDistribution::exponential;
  if (name == "weibull") return FailureDistribution::weibull;
  throw std::invalid_argument("failures.distribution must be \"exponential\" or \"weibull\", got \"" +
                              name + "\"");
}

void validate(const FailureModel& f, const JobFootprint& job) {
  check_rate(f.node_failure_rate_per_day, "failures.node_failure_rate_per_day");
  check_rate(f.gpu_failure_rate_per_day, "failures.gpu_failure_rate_per_day");
  check_rate(f.link_failure_rate_per_day, "failures.link_failure_rate_per_day");
  if (!std::isfinite(f.weibull_shape) || f.weibull_shape <= 0.0) {
    throw std::invalid_argument("failures.weibull_shape must be positive, got " +
                                std::to_string(f.weibull_shape));
  }
  if (job.nodes < 1) throw std::invalid_argument("cluster.nodes: the job needs at least one node");
  if (job.gpus_per_node < 1) throw std::invalid_argument("cluster.gpus_per_node must be at least 1");
  if (job.links < 0) throw std::invalid_argument("reliability: the job's link count must be >= 0");
}

double node_failure_rate_per_s(const FailureModel& f, int gpus_per_node) {
  return (f.node_failure_rate_per_day + gpus_per_node * f.gpu_failure_rate_per_day) / kSecondsPerDay;
}

double job_failure_rate_per_s(const FailureModel& f, const JobFootprint& job) {
  validate(f, job);
  return job.nodes * node_failure_rate_per_s(f, job.gpus_per_node) +
         job.links * f.link_failure_rate_per_day / kSecondsPerDay;
}

double job_mtbf_s(const FailureModel& f, const JobFootprint& job) {
  const double rate = job_failure_rate_per_s(f, job);
  return rate > 0.0 ? 1.0 / rate : std::numeric_limits<double>::infinity();
}

}  // namespace ct::reliability
