#include "models/scenario/nccl_tests_run.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/collective/nccl_tests.h"
#include "models/network/cluster.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/runner.h"

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
  if (!q.node_list.empty()) {
    if (q.nodes.size() != 1 || q.nodes.front() != static_cast<int>(q.node_list.size())) {
      problems.push_back("--node-list: " + std::to_string(q.node_list.size()) +
                         " nodes listed; --nodes must be that count (or left out)");
    }
    std::set<int> seen;
    for (const int n : q.node_list) {
      if (n < 0 || n >= c.cluster.nodes) {
        problems.push_back("--node-list: got node " + std::to_string(n) + ", expected 0.." +
                           std::to_string(c.cluster.nodes - 1) + " (cluster.nodes)");
      } else if (!seen.insert(n).second) {
        problems.push_back("--node-list: node " + std::to_string(n) + " given twice");
      }
    }
  }
  // Link faults act on the whole table; other kinds have no meaning in a collective benchmark.
  for (size_t i = 0; i < c.faults.size(); ++i) {
    const FaultSpec& f = c.faults[i];
    const std::string key = "faults[" + std::to_string(i) + "]";
    if (!is_link_fault(f.kind)) {
      problems.push_back(key + ".kind: " + f.kind +
                         " does not act in nccl-tests (a collective benchmark); expected link_degrade, "
                         "slow_receiver, link_down or switch_down, or use run");
    } else if (f.at.seconds() != 0.0 || f.duration.seconds() != 0.0) {
      problems.push_back(key +
                         ": nccl-tests applies link faults to the whole table; expected at 0s and no "
                         "duration");
    }
  }
  if (!problems.empty()) throw ScenarioError(problems);
  options.node_list = q.node_list;
  options.faults = link_fault_specs(c);
  options.network_mode = c.network.mode;
  options.network = network_params(c);
  options.collective = collective_params(c);
  const network::Cluster cluster(cluster_spec(c));
  std::vector<NcclTestsTable> out;
  for (const int n : q.nodes) {
    options.nodes = n;
    try {
      out.push_back({n, n * c.cluster.gpus_per_node, options, collective::run_nccl_tests(cluster, options)});
    } catch (const std::invalid_argument& e) {  // a fault naming a link or switch the fabric lacks
      throw ScenarioError({e.what()});
    }
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

FabricElements fabric_switches_between(const Config& c, const std::vector<int>& nodes) {
  const network::Cluster cluster(cluster_spec(c));
  const int per_node = cluster.nics_per_node();
  std::string bad;
  for (const int n : nodes) {
    if (n < 0 || n >= cluster.nodes()) bad += (bad.empty() ? "" : ", ") + std::to_string(n);
  }
  if (!bad.empty()) {
    throw ScenarioError({"nodes: got node " + bad + ", expected 0-" + std::to_string(cluster.nodes() - 1) +
                         " (the scenario's cluster)"});
  }
  std::vector<int> distinct = nodes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() < 2) return {};  // one node: NVLink only
  const auto& topo = cluster.topology();
  std::vector<uint8_t> on(static_cast<size_t>(topo.vertex_count()), 0);
  std::vector<topology::LinkDir> dirs;
  for (int rail = 0; rail < per_node; ++rail) {
    // One NIC per distinct set of leaves: nodes under the same leaves cross the same switches.
    std::map<std::vector<topology::VertexId>, int> by_leaves;
    for (const int n : distinct) {
      const int nic = n * per_node + rail;
      by_leaves.emplace(topo.leaves_of(nic), nic);
      for (const topology::LinkDir d : topo.out_links(nic)) dirs.push_back(d);  // the NIC's own cables
    }
    for (auto a = by_leaves.begin(); a != by_leaves.end(); ++a) {
      for (const topology::VertexId leaf : a->first) on[static_cast<size_t>(leaf)] = 1;
      for (auto b = std::next(a); b != by_leaves.end(); ++b) {
        for (const topology::VertexId v : topo.switches_on_paths(a->second, b->second, &dirs))
          on[static_cast<size_t>(v)] = 1;
      }
    }
  }
  FabricElements out;
  for (size_t v = 0; v < on.size(); ++v) {
    if (on[v]) out.switches.push_back(topo.vertex(static_cast<topology::VertexId>(v)).name);
  }
  // Cables, both directions as one: a collective's ring crosses them both ways.
  std::set<std::pair<std::string, std::string>> cables;
  for (const topology::LinkDir d : dirs) {
    // A NIC's cable names the NIC first; switch-to-switch cables in name order.
    std::string a = topo.vertex(topo.source(d)).name, b = topo.vertex(topo.target(d)).name;
    const bool nic_last = !topo.is_switch(topo.target(d));
    const bool switches = topo.is_switch(topo.source(d)) && !nic_last;
    if (nic_last || (switches && b < a)) std::swap(a, b);
    cables.emplace(std::move(a), std::move(b));
  }
  for (const auto& [a, b] : cables) out.cables.push_back(a + "-" + b);
  return out;
}

}  // namespace ct::scenario
