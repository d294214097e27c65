// `clustertwin nccl-tests`: the nccl-tests table of one collective on a scenario's cluster,
// for each requested node count (8 B to 8 GiB, x2 steps), on the scenario's network mode.
#pragma once

#include <string>
#include <vector>

#include "models/scenario/config.h"

namespace ct::scenario {

// Throws ScenarioError naming --nodes or --op when they do not fit the cluster.
std::string nccl_tests_tables(const Config& config, const std::string& op, const std::vector<int>& nodes,
                              const std::string& min_bytes, const std::string& max_bytes);

}  // namespace ct::scenario
