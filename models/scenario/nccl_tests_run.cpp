#include "models/scenario/nccl_tests_run.h"

#include "models/collective/nccl_tests.h"
#include "models/network/cluster.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"

namespace ct::scenario {

std::vector<NcclTestsTable> nccl_tests_run(const Config& c, const NcclTestsRequest& q) {
  collective::NcclTestsOptions options;
  std::vector<std::string> problems;
  try {
    options.op = collective::parse_op(q.op);
  } catch (const std::exception& e) {
    problems.push_back(std::string("--op: ") + e.what());
  }
  try {
    options.min_bytes = sim::parse_bytes(q.min_bytes).n;
    options.max_bytes = sim::parse_bytes(q.max_bytes).n;
    if (options.min_bytes <= 0 || options.max_bytes < options.min_bytes)
      problems.push_back("-b/-e: got " + q.min_bytes + " / " + q.max_bytes +
                         ", expected 0 < minbytes <= maxbytes");
  } catch (const std::exception& e) {
    problems.push_back(std::string("-b/-e (--minbytes/--maxbytes): ") + e.what());
  }
  options.step_factor = q.step_factor;
  options.step_bytes = q.step_bytes;
  options.datatype = q.datatype;
  options.redop = q.redop;
  try {
    (void)collective::nccl_datatype_bytes(q.datatype);
  } catch (const std::exception& e) {
    problems.push_back(std::string("-d (--datatype): ") + e.what());
  }
  try {
    collective::check_nccl_redop(q.redop);
  } catch (const std::exception& e) {
    problems.push_back(std::string("-o (--redop): ") + e.what());
  }
  if (problems.empty()) {
    try {
      (void)collective::nccl_tests_sizes(options);
    } catch (const std::exception& e) {
      problems.push_back(std::string("-f/-i (--stepfactor/--stepbytes): ") + e.what());
    }
  }
  if (q.nodes.empty()) problems.push_back("--nodes: expected at least one node count");
  for (const int n : q.nodes) {
    if (n < 1 || n > c.cluster.nodes) {
      problems.push_back("--nodes: got " + std::to_string(n) + ", expected 1.." +
                         std::to_string(c.cluster.nodes) + " (cluster.nodes)");
    }
  }
  if (c.network.mode == "packet") {
    problems.push_back(
        "network.mode: nccl-tests runs on flow or analytical; packet mode is for traffic studies");
  }
  if (!problems.empty()) throw ScenarioError(problems);
  options.network_mode = c.network.mode;
  options.network = network_params(c);
  options.collective = collective_params(c);
  const network::Cluster cluster(cluster_spec(c));
  std::vector<NcclTestsTable> out;
  for (const int n : q.nodes) {
    options.nodes = n;
    out.push_back({n, n * c.cluster.gpus_per_node, options, collective::run_nccl_tests(cluster, options)});
  }
  return out;
}

std::string nccl_tests_tables(const Config& c, const NcclTestsRequest& q) {
  std::string out;
  for (const NcclTestsTable& t : nccl_tests_run(c, q)) {
    out += "# " + std::to_string(t.nodes) + " nodes x " + std::to_string(c.cluster.gpus_per_node) +
           " GPUs, network.mode=" + c.network.mode + "\n";
    out += collective::format_nccl_tests(t.rows, t.options, t.ranks) + "\n";
  }
  return out;
}

}  // namespace ct::scenario
