// nccl-tests on the twin: one collective per size (min_bytes, x2, .. max_bytes) over all GPUs
// of the first `nodes` nodes, run one after another on one Simulation, reported like NVIDIA's
// nccl-tests (time, algbw = size / time, busbw = algbw x bus_factor(op, n)).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/collective/collective.h"
#include "models/network/cluster.h"
#include "models/network/network.h"

namespace ct::collective {

struct NcclTestsOptions {
  std::string network_mode = "flow";  // network.mode
  Op op = Op::all_reduce;
  int nodes = 2;
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{8} << 30;
  CollectiveParams collective;
  network::NetworkParams network;
};

struct NcclTestsRow {
  int64_t size_bytes = 0;
  int64_t count = 0;  // elements of float
  std::string type = "float";
  std::string redop;  // "sum" for reductions, "none" otherwise
  int root = -1;      // 0 for broadcast, -1 otherwise
  double time_us = 0.0;
  double algbw_GBps = 0.0;
  double busbw_GBps = 0.0;
  Algorithm algorithm = Algorithm::ring;
};

// Throws std::invalid_argument naming `nodes` when it is not in [1, cluster.nodes()], and
// `min_bytes` / `max_bytes` when they are not 0 < min <= max.
std::vector<NcclTestsRow> run_nccl_tests(const network::Cluster& cluster, const NcclTestsOptions& options);

// The table as nccl-tests prints it (out-of-place and in-place columns carry the same
// simulated figures), ending with "# Avg bus bandwidth    : X".
std::string format_nccl_tests(std::span<const NcclTestsRow> rows, const NcclTestsOptions& options, int ranks);

}  // namespace ct::collective
