#include "models/scenario/nccl_tests_run.h"

#include "models/collective/nccl_tests.h"
#include "models/network/cluster.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"

namespace ct::scenario {

std::string nccl_tests_tables(const Config& c, const std::string& op, const std::vector<int>& nodes,
                              const std::string& min_bytes, const std::string& max_bytes) {
  collective::NcclTestsOptions options;
  try {
    options.op = collective::parse_op(op);
  } catch (const std::exception& e) {
    throw ScenarioError({std::string("--op: ") + e.what()});
  }
  try {
    options.min_bytes = sim::parse_bytes(min_bytes).n;
    options.max_bytes = sim::parse_bytes(max_bytes).n;
  } catch (const std::exception& e) {
    throw ScenarioError({std::string("--minbytes/--maxbytes: ") + e.what()});
  }
  if (c.network.mode == "packet") {
    throw ScenarioError(
        {"network.mode: nccl-tests runs on flow or analytical; packet mode is for traffic studies"});
  }
  options.network_mode = c.network.mode;
  options.network = network_params(c);
  options.collective = collective_params(c);
  const network::Cluster cluster(cluster_spec(c));
  std::string out;
  for (const int n : nodes) {
    if (n < 1 || n > c.cluster.nodes) {
      throw ScenarioError({"--nodes: got " + std::to_string(n) + ", expected 1.." +
                           std::to_string(c.cluster.nodes) + " (cluster.nodes)"});
    }
    options.nodes = n;
    const auto rows = collective::run_nccl_tests(cluster, options);
    out += "# " + std::to_string(n) + " nodes x " + std::to_string(c.cluster.gpus_per_node) +
           " GPUs, network.mode=" + c.network.mode + "\n";
    out += collective::format_nccl_tests(rows, options, n * c.cluster.gpus_per_node) + "\n";
  }
  return out;
}

}  // namespace ct::scenario
