// Failure processes of the nodes, GPUs and links a job uses, and the job's MTBF.
//
// Rates are per component per day (the scenario's failures.*_rate_per_day). A GPU failure
// takes its node out (the node is replaced), so a node of g GPUs fails at
//   lambda_node = node_rate + g x gpu_rate  per day,
// and the job, holding n nodes and l links, is interrupted at
//   lambda_job = n lambda_node + l link_rate  per day,     M = 86400 / lambda_job  seconds
// (M infinite when every rate is 0). This M is the job MTBF of Young/Daly. With Weibull
// inter-failure times the per-node mean stays 1 / lambda_node, i.e. the scale is
//   eta = (1 / lambda_node) / Gamma(1 + 1/k).
// Link failures are always exponential (they interrupt the job but do not remove a node).
#pragma once

#include <string>

namespace ct::reliability {

enum class FailureDistribution { exponential, weibull };

struct FailureModel {
  double node_failure_rate_per_day = 0.0;  // failures.node_failure_rate_per_day
  double gpu_failure_rate_per_day = 0.0;   // failures.gpu_failure_rate_per_day
  double link_failure_rate_per_day = 0.0;  // failures.link_failure_rate_per_day
  FailureDistribution distribution = FailureDistribution::exponential;  // failures.distribution
  double weibull_shape = 1.0;              // failures.weibull_shape (k)
};

struct JobFootprint {
  int nodes = 0;          // nodes the job runs on (spares excluded)
  int gpus_per_node = 8;
  int links = 0;          // links whose failure interrupts the job (e.g. nodes x NICs)
};

constexpr double kSecondsPerDay = 86400.0;

// "exponential" | "weibull"; anything else throws std::invalid_argument naming
// failures.distribution.
FailureDistribution parse_failure_distribution(const std::string& name);

// Throws std::invalid_argument naming the failures.* key for a negative or non-finite rate,
// or a non-positive Weibull shape; and for a footprint without nodes or with negative links.
void validate(const FailureModel& failures, const JobFootprint& job);

// lambda_node in failures per second.
double node_failure_rate_per_s(const FailureModel& failures, int gpus_per_node);
// lambda_job in failures per second.
double job_failure_rate_per_s(const FailureModel& failures, const JobFootprint& job);
// M = 1 / lambda_job seconds; +infinity when lambda_job is 0.
double job_mtbf_s(const FailureModel& failures, const JobFootprint& job);

}  // namespace ct::reliability
