// nccl-tests table for the default node (8 x H100, 8 x 400 Gb/s) on a rail-optimized Clos:
//   ct_nccl_tests [op=all_reduce] [nodes=2] [mode=flow] [algorithm=auto|ring|tree] [cluster_nodes=nodes]
// The CLI (`./clustertwin nccl-tests`) builds the cluster from a scenario instead.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "models/collective/nccl_tests.h"
#include "models/hardware/gpu_catalog.h"

namespace {

int run(int argc, char** argv) {
  using namespace ct;
  collective::NcclTestsOptions o;
  o.op = collective::parse_op(argc > 1 ? argv[1] : "all_reduce");
  o.nodes = argc > 2 ? std::atoi(argv[2]) : 2;
  o.network_mode = argc > 3 ? argv[3] : "flow";
  const std::string algo = argc > 4 ? argv[4] : "auto";
  o.collective.algorithm = algo == "ring"   ? collective::Algorithm::ring
                           : algo == "tree" ? collective::Algorithm::tree
                                            : collective::Algorithm::automatic;
  network::ClusterSpec spec;
  spec.node.gpu = hardware::gpu("H100-SXM");
  spec.node.nic_rate = sim::Bandwidth::gbps(400);
  spec.node.nvlink_rate = sim::Bandwidth::bytes_per_s(450e9);
  spec.node.nvlink_latency = sim::Duration::ns(700);
  spec.node.pcie_rate = sim::Bandwidth::bytes_per_s(64e9);
  spec.nodes = argc > 5 ? std::atoi(argv[5]) : o.nodes;
  const network::Cluster cluster(spec);
  const auto rows = collective::run_nccl_tests(cluster, o);
  const int ranks = o.op == collective::Op::send_recv ? 2 : o.nodes * cluster.gpus_per_node();
  std::fputs(collective::format_nccl_tests(rows, o, ranks).c_str(), stdout);
  return 0;
}

}  // namespace

// Bad arguments are a clear error (exit 2), never an uncaught exception.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ct_nccl_tests: %s\n", e.what());
    return 2;
  }
}
