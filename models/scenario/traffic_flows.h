// The flows of a `traffic` study, generated before the run (every pattern but `collective`).
//   incast / permutation / all_to_all: see traffic_run.h.
//   websearch / hadoop: flows arrive at every GPU as a Poisson process during
//     `traffic.duration`, each to a uniformly drawn other GPU, with sizes from a published
//     flow-size distribution, so that every GPU offers `traffic.load` of its NIC share on
//     average. websearch: DCTCP paper (Alizadeh et al., SIGCOMM'10, Fig. 4), mean 1.6 MB;
//     hadoop: Facebook Hadoop cluster (Roy et al., SIGCOMM'15, Fig. 6), mean 126 KB. Both as the
//     piecewise-linear CDFs the HPCC paper's traffic generator uses (HPCC SIGCOMM'19, sizes in
//     bytes, probabilities in %), sampled by inverse transform.
//     traffic.background = incast adds `fan_in` long flows of `size` into GPU 0 at time 0.
//   file: rows "src_gpu,dst_gpu,bytes,start_s[,after]" of a CSV file (header line first);
//     `after` (optional, 0-based row index of an earlier flow, -1 = none) starts the flow start_s
//     after that flow is delivered: dependency chains such as a ring all-reduce's steps.
// All draws come from the scenario seed (stream "traffic").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/scenario/config.h"

namespace ct::scenario {

struct FlowSpec {
  int src = 0;
  int dst = 0;
  int64_t bytes = 0;
  double start_s = 0.0;
  bool background = false;  // a long flow of traffic.background
  // Index of a flow (earlier in the list) whose delivery starts this one, start_s after it;
  // -1: start_s is absolute.
  int64_t after = -1;
};

// (size in bytes, cumulative probability in [0, 1]) points of a named distribution.
const std::vector<std::pair<double, double>>& flow_size_cdf(const std::string& name);
double flow_size_mean(const std::vector<std::pair<double, double>>& cdf);

// Throws ScenarioError naming the key (and the file line) of a bad value.
std::vector<FlowSpec> generate_flows(const Config& c, int gpus, double gpu_share_bps);

}  // namespace ct::scenario
