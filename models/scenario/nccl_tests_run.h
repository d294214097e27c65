// `clustertwin nccl-tests`: the nccl-tests table of one collective on a scenario's cluster,
// for each requested node count (8 B to 8 GiB, x2 steps), on the scenario's network mode.
#pragma once

#include <string>
#include <vector>

#include "models/collective/nccl_tests.h"
#include "models/scenario/config.h"

namespace ct::scenario {

// What the nccl-tests flags ask for: the collective (--op), node counts (--nodes), sizes (-b, -e,
// -f or -i), the element type (-d) and the reduction (-o).
struct NcclTestsRequest {
  std::string op = "all_reduce";
  std::vector<int> nodes{2};
  std::string min_bytes = "8B", max_bytes = "8GiB";
  int64_t step_factor = 2;
  int64_t step_bytes = 0;  // > 0: fixed increment instead of the factor
  std::string datatype = "float";
  std::string redop = "sum";
  std::vector<int> node_list;  // --node-list: the nodes of one run (its length is the node count)
};

// One node count's rows.
struct NcclTestsTable {
  int nodes = 0;
  int ranks = 0;
  collective::NcclTestsOptions options;
  std::vector<collective::NcclTestsRow> rows;
};

// The scenario's link faults (link_degrade, slow_receiver, link_down, switch_down) act for the
// whole table: each must start at 0 s and have no duration; any other fault kind is refused.
// Throws ScenarioError naming the flag (--nodes, --node-list, --op, -b/-e, -f/-i, -d, -o) or
// fault that does not fit.
std::vector<NcclTestsTable> nccl_tests_run(const Config& config, const NcclTestsRequest& request);
// The tables as nccl-tests prints them, one per node count.
std::string nccl_tests_tables(const Config& config, const NcclTestsRequest& request);

// What a collective among these nodes of the scenario's cluster can cross (for localising a
// shortfall, compare.py): the name of every switch, and of every cable as "a-b" (the link
// fault syntax), on some shortest path between two of the nodes' NICs on the same rail (every
// ECMP choice), the nodes' own NIC cables included. Pairs of nodes under the same leaves are computed once.
// Throws ScenarioError naming a node the cluster does not have.
struct FabricElements {
  std::vector<std::string> switches, cables;
};
FabricElements fabric_switches_between(const Config& config, const std::vector<int>& nodes);

}  // namespace ct::scenario
