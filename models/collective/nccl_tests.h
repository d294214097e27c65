// nccl-tests on the twin: one collective per size (min_bytes, x2, .. max_bytes) over all GPUs
// of the first `nodes` nodes, run one after another on one Simulation, reported like NVIDIA's
// nccl-tests (time, algbw = size / time, busbw = algbw x bus_factor(op, n)).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/collective/collective.h"
#include "models/network/capacity_faults.h"
#include "models/network/cluster.h"
#include "models/network/network.h"

namespace ct::collective {

struct NcclTestsOptions {
  std::string network_mode = "flow";  // network.mode
  Op op = Op::all_reduce;
  int nodes = 2;
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{8} << 30;
  // Sizes as nccl-tests steps them (-f / -i): size x step_factor, or size + step_bytes when
  // step_bytes > 0.
  int64_t step_factor = 2;
  int64_t step_bytes = 0;
  // -d: the element type (nccl_datatype_bytes) and -o: the reduction of all_reduce and
  // reduce_scatter. Both change the count and the columns, not the time: the simulated
  // collective moves bytes, and NCCL reduces every type and operation at the same link speed.
  std::string datatype = "float";
  std::string redop = "sum";
  CollectiveParams collective;
  network::NetworkParams network;
  // The nodes the test runs on, in rank order (nodes of them); empty: nodes 0 .. nodes-1.
  std::vector<int> node_list;
  // Link faults in force for the whole table (at zero, no end): link_degrade, slow_receiver,
  // link_down, switch_down (network/capacity_faults.h).
  std::vector<network::LinkFaultSpec> faults;
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

// Bytes of one element of an nccl-tests data type (int8 uint8 int32 uint32 int64 uint64 half
// float double bfloat16 f8e4m3 f8e5m2); throws std::invalid_argument listing them.
int nccl_datatype_bytes(const std::string& name);
// Throws std::invalid_argument unless name is an nccl-tests reduction (sum prod max min avg).
void check_nccl_redop(const std::string& name);
// The sizes min_bytes, then x step_factor (or + step_bytes), up to max_bytes; throws
// std::invalid_argument naming the option when the steps are not >= 2 / >= 1 or there would
// be more than kMaxNcclTestsSizes.
inline constexpr size_t kMaxNcclTestsSizes = 4096;
std::vector<int64_t> nccl_tests_sizes(const NcclTestsOptions& options);

// Throws std::invalid_argument naming `nodes` when it is not in [1, cluster.nodes()], and
// `min_bytes` / `max_bytes` when they are not 0 < min <= max.
std::vector<NcclTestsRow> run_nccl_tests(const network::Cluster& cluster, const NcclTestsOptions& options);

// The table as nccl-tests prints it (out-of-place and in-place columns carry the same
// simulated figures), ending with "# Avg bus bandwidth    : X".
std::string format_nccl_tests(std::span<const NcclTestsRow> rows, const NcclTestsOptions& options, int ranks);

}  // namespace ct::collective
