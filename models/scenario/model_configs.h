// Scenario -> typed model configuration. Models never read scenario files; the scenario
// layer hands each its own config. check_config() runs every cross-field rule (catalog
// names, divisibility of the layout, fabric size limits, fault targets) and throws
// ScenarioError naming the key paths.
#pragma once

#include "models/collective/collective.h"
#include "models/hardware/node.h"
#include "models/hardware/power.h"
#include "models/network/cluster.h"
#include "models/network/network.h"
#include "models/network/packet_network.h"
#include "models/scenario/config.h"
#include "models/topology/fabric_config.h"
#include "models/workload/model_spec.h"

namespace ct::scenario {

hardware::GpuSpec gpu_spec(const Config& c);
hardware::NodeSpec node_spec(const Config& c);
topology::FabricConfig fabric_config(const Config& c);
workload::JobSpec job_spec(const Config& c);  // data_parallel resolved
network::ClusterSpec cluster_spec(const Config& c);
network::NetworkParams network_params(const Config& c);
collective::CollectiveParams collective_params(const Config& c);
network::PacketParams packet_params(const Config& c);  // throws ScenarioError for unbuilt schemes
hardware::PowerModel power_model(const Config& c);

// Nodes the job may use: all but the hot-spare pool (recovery.hot_spares x nodes, rounded up).
int usable_nodes(const Config& c);

// Resolves derived values in place (data_parallel = 0 -> the rest of the usable GPUs) and
// checks every cross-field rule.
void check_config(Config& c);

}  // namespace ct::scenario
