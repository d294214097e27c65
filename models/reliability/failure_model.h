// Failure processes of the components a job uses, by class, and the job's MTBF.
//
// Classes and what a failure does (rates are per component per day, the scenario's
// failures.*_rate_per_day):
//   node-removing (the node goes to repair and a spare takes its slot):
//     gpu (per GPU), hbm (per GPU), nic (per NIC), host (per node: CPU, memory, PSU, SSD,
//     board, host maintenance; the key failures.node_failure_rate_per_day)
//   job-wide (the job restarts on the same nodes; the part is fixed off the job's path):
//     link (per link: cable, optics, switch port), switch (per switch), software (per node:
//     framework, driver and dependency faults that crash the job), hang (per node: faults
//     that leave a collective waiting, found only by the collective timeout)
// A node of g GPUs and c NICs therefore fails at
//   lambda_node = host + g (gpu + hbm) + c nic                                  per day,
// the job-wide processes add
//   lambda_wide = links x link + switches x switch + nodes x (software + hang)   per day,
// and the job, holding n nodes, is interrupted at lambda_job = n lambda_node + lambda_wide
// per day; M = 86400 / lambda_job seconds (infinite when every rate is 0) is the job MTBF of
// Young/Daly. The class of a failure is drawn in proportion to the class rates (competing
// exponential risks; with Weibull node lifetimes the same split holds because every
// node-removing class shares the shape). With Weibull the per-node mean stays 1/lambda_node:
//   eta = (1 / lambda_node) / Gamma(1 + 1/k).
// Job-wide processes are always exponential.
// Latent defects: a share `latent_defect_fraction` of the nodes that join the job (at the
// start, as spares, back from repair) carry a defect that fails them after an exponential
// time of mean `latent_defect_mean_s` (counted as class "latent") unless a health check
// catches it first (campaign.h).
#pragma once

#include <array>
#include <string>

namespace ct::reliability {

enum class FailureDistribution { exponential, weibull };

enum class FailureClass { gpu, hbm, nic, host, latent, link, switch_fabric, software, hang };
constexpr int kFailureClasses = 9;
constexpr std::array<FailureClass, 4> kNodeClasses{FailureClass::gpu, FailureClass::hbm, FailureClass::nic,
                                                   FailureClass::host};
constexpr std::array<FailureClass, 4> kJobWideClasses{FailureClass::link, FailureClass::switch_fabric,
                                                      FailureClass::software, FailureClass::hang};

// "gpu", "hbm", "nic", "host", "latent", "link", "switch", "software", "hang".
const char* failure_class_name(FailureClass c);

struct FailureModel {
  double node_failure_rate_per_day = 0.0;      // host, per node
  double gpu_failure_rate_per_day = 0.0;       // per GPU
  double hbm_failure_rate_per_day = 0.0;       // per GPU
  double nic_failure_rate_per_day = 0.0;       // per NIC
  double link_failure_rate_per_day = 0.0;      // per link
  double switch_failure_rate_per_day = 0.0;    // per switch
  double software_failure_rate_per_day = 0.0;  // per node
  double hang_failure_rate_per_day = 0.0;      // per node
  FailureDistribution distribution = FailureDistribution::exponential;
  double weibull_shape = 1.0;  // k
  double latent_defect_fraction = 0.0;
  double latent_defect_mean_s = 7200.0;
};

struct JobFootprint {
  int nodes = 0;  // nodes the job runs on (spares excluded)
  int gpus_per_node = 8;
  int links = 0;  // links whose failure interrupts the job (e.g. nodes x NICs)
  int nics_per_node = 0;
  int switches = 0;  // switches on the job's paths
};

constexpr double kSecondsPerDay = 86400.0;

// The interruption profile of Meta's Llama 3 405B pre-training (Llama Team, "The Llama 3 Herd
// of Models", 2024, Table 5): 419 unexpected interruptions in a 54-day snapshot on 16,384
// H100 GPUs (2,048 nodes of 8 GPUs and 8 NICs): 110,592 node-days, 884,736 GPU-days and as
// many NIC-days. Root causes mapped to classes:
//   gpu 196 = faulty GPU 148 + GPU SRAM 19 + GPU system processor 17 + silent data
//             corruption 6 + thermal interface/sensor 6            -> 196 / 884,736 per GPU-day
//   hbm 72 (HBM3)                                                -> 72 / 884,736 per GPU-day
//   nic 7                                                        -> 7 / 884,736 per NIC-day
//   host 46 = host maintenance 32 + SSD 3 + power supply 3 + chassis 2 + IO expansion
//             board 2 + CPU 2 + system memory 2                   -> 46 / 110,592 per node-day
//   link 35 (network switch/cable; the table does not split switches from cables, so all
//             are charged to the 16,384 NIC links, switch = 0)   -> 35 / 884,736 per link-day
//   software 56 = software bug 54 + dependency 2                 -> 56 / 110,592 per node-day
//   hang 7 (NCCL watchdog timeouts)                              -> 7 / 110,592 per node-day
// (The paper prints 30.1% next to the 148 faulty-GPU count; 148 / 419 is 35.3%. The counts,
// which sum to 419, are used.)
FailureModel llama3_profile();

// "exponential" | "weibull"; anything else throws std::invalid_argument naming
// failures.distribution.
FailureDistribution parse_failure_distribution(const std::string& name);

// Throws std::invalid_argument naming the failures.* key for a negative or non-finite rate,
// a non-positive Weibull shape, a latent-defect share outside [0, 1] or a non-positive mean;
// and for a footprint without nodes or with negative counts.
void validate(const FailureModel& failures, const JobFootprint& job);

// Failures per second of one class for the whole job (node-removing classes: over its nodes).
double class_rate_per_s(const FailureModel& failures, const JobFootprint& job, FailureClass c);
// lambda_node in failures per second (latent defects excluded: they are not a steady rate).
double node_failure_rate_per_s(const FailureModel& failures, const JobFootprint& job);
// The job-wide processes' total rate, per second.
double job_wide_failure_rate_per_s(const FailureModel& failures, const JobFootprint& job);
// lambda_job in failures per second.
double job_failure_rate_per_s(const FailureModel& failures, const JobFootprint& job);
// M = 1 / lambda_job seconds; +infinity when lambda_job is 0.
double job_mtbf_s(const FailureModel& failures, const JobFootprint& job);

}  // namespace ct::reliability
