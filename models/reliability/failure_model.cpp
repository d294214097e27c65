// Failure classes, the Llama 3 profile and the job MTBF; the maths is in failure_model.h.
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

double per_day(const FailureModel& f, const JobFootprint& job, FailureClass c) {
  const double n = job.nodes;
  switch (c) {
    case FailureClass::gpu:
      return n * job.gpus_per_node * f.gpu_failure_rate_per_day;
    case FailureClass::hbm:
      return n * job.gpus_per_node * f.hbm_failure_rate_per_day;
    case FailureClass::nic:
      return n * job.nics_per_node * f.nic_failure_rate_per_day;
    case FailureClass::host:
      return n * f.node_failure_rate_per_day;
    case FailureClass::latent:
      return 0.0;
    case FailureClass::link:
      return job.links * f.link_failure_rate_per_day;
    case FailureClass::switch_fabric:
      return job.switches * f.switch_failure_rate_per_day;
    case FailureClass::software:
      return n * f.software_failure_rate_per_day;
    case FailureClass::hang:
      return n * f.hang_failure_rate_per_day;
  }
  return 0.0;
}

}  // namespace

const char* failure_class_name(FailureClass c) {
  switch (c) {
    case FailureClass::gpu:
      return "gpu";
    case FailureClass::hbm:
      return "hbm";
    case FailureClass::nic:
      return "nic";
    case FailureClass::host:
      return "host";
    case FailureClass::latent:
      return "latent";
    case FailureClass::link:
      return "link";
    case FailureClass::switch_fabric:
      return "switch";
    case FailureClass::software:
      return "software";
    case FailureClass::hang:
      return "hang";
  }
  return "?";
}

FailureModel llama3_profile() {
  constexpr double gpu_days = 16384.0 * 54.0;
  constexpr double node_days = 2048.0 * 54.0;
  FailureModel f;
  f.gpu_failure_rate_per_day = 196.0 / gpu_days;
  f.hbm_failure_rate_per_day = 72.0 / gpu_days;
  f.nic_failure_rate_per_day = 7.0 / gpu_days;
  f.node_failure_rate_per_day = 46.0 / node_days;
  f.link_failure_rate_per_day = 35.0 / gpu_days;
  f.switch_failure_rate_per_day = 0.0;
  f.software_failure_rate_per_day = 56.0 / node_days;
  f.hang_failure_rate_per_day = 7.0 / node_days;
  return f;
}

FailureDistribution parse_failure_distribution(const std::string& name) {
  if (name == "exponential") return FailureDistribution::exponential;
  if (name == "weibull") return FailureDistribution::weibull;
  throw std::invalid_argument("failures.distribution must be \"exponential\" or \"weibull\", got \"" + name +
                              "\"");
}

void validate(const FailureModel& f, const JobFootprint& job) {
  check_rate(f.node_failure_rate_per_day, "failures.node_failure_rate_per_day");
  check_rate(f.gpu_failure_rate_per_day, "failures.gpu_failure_rate_per_day");
  check_rate(f.hbm_failure_rate_per_day, "failures.hbm_failure_rate_per_day");
  check_rate(f.nic_failure_rate_per_day, "failures.nic_failure_rate_per_day");
  check_rate(f.link_failure_rate_per_day, "failures.link_failure_rate_per_day");
  check_rate(f.switch_failure_rate_per_day, "failures.switch_failure_rate_per_day");
  check_rate(f.software_failure_rate_per_day, "failures.software_failure_rate_per_day");
  check_rate(f.hang_failure_rate_per_day, "failures.hang_failure_rate_per_day");
  if (!std::isfinite(f.weibull_shape) || f.weibull_shape <= 0.0) {
    throw std::invalid_argument("failures.weibull_shape must be positive, got " +
                                std::to_string(f.weibull_shape));
  }
  if (!(f.latent_defect_fraction >= 0.0 && f.latent_defect_fraction <= 1.0)) {
    throw std::invalid_argument("failures.latent_defect_fraction must be within [0, 1], got " +
                                std::to_string(f.latent_defect_fraction));
  }
  if (!std::isfinite(f.latent_defect_mean_s) || f.latent_defect_mean_s <= 0.0) {
    throw std::invalid_argument("failures.latent_defect_mean must be a positive duration, got " +
                                std::to_string(f.latent_defect_mean_s) + " s");
  }
  if (job.nodes < 1) throw std::invalid_argument("cluster.nodes: the job needs at least one node");
  if (job.gpus_per_node < 1) throw std::invalid_argument("cluster.gpus_per_node must be at least 1");
  if (job.links < 0 || job.nics_per_node < 0 || job.switches < 0) {
    throw std::invalid_argument("reliability: the job's link, NIC and switch counts must be >= 0");
  }
}

double class_rate_per_s(const FailureModel& f, const JobFootprint& job, FailureClass c) {
  return per_day(f, job, c) / kSecondsPerDay;
}

double node_failure_rate_per_s(const FailureModel& f, const JobFootprint& job) {
  if (job.nodes < 1) return 0.0;
  double sum = 0.0;
  for (FailureClass c : kNodeClasses) sum += per_day(f, job, c);
  return sum / job.nodes / kSecondsPerDay;
}

double job_wide_failure_rate_per_s(const FailureModel& f, const JobFootprint& job) {
  double sum = 0.0;
  for (FailureClass c : kJobWideClasses) sum += per_day(f, job, c);
  return sum / kSecondsPerDay;
}

double job_failure_rate_per_s(const FailureModel& f, const JobFootprint& job) {
  validate(f, job);
  return job.nodes * node_failure_rate_per_s(f, job) + job_wide_failure_rate_per_s(f, job);
}

double job_mtbf_s(const FailureModel& f, const JobFootprint& job) {
  const double rate = job_failure_rate_per_s(f, job);
  return rate > 0.0 ? 1.0 / rate : std::numeric_limits<double>::infinity();
}

}  // namespace ct::reliability
