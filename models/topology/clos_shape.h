// Internal: the dimensions of a generated Clos fabric and the checks of a FabricConfig.
#pragma once

#include <string>

#include "models/topology/fabric_config.h"

namespace ct::topology::detail {

// Dimensions of one plane (every plane of a multi-plane fabric is identical).
struct ClosShape {
  bool rail_aligned = true;  // rail_optimized / multi_plane: NIC r of a rail group -> leaf r
  int tiers = 2;
  int radix = 0;
  int planes = 1;
  int down = 0;  // leaf ports to NICs: round(radix * o / (1 + o))
  int up = 0;    // leaf ports to spines: radix - down
  int leaves = 0;
  // 2 tiers: spines in the plane. 3 tiers: spines per pod (= up, one cable per leaf).
  int spines = 0;
  int leaves_per_pod = 0;   // 3 tiers: radix / 2
  int pods = 0;             // 3 tiers
  int spine_up = 0;         // 3 tiers: radix - leaves_per_pod
  int cores_per_group = 0;  // 3 tiers: ceil(pods * spine_up / radix); groups = spines
  long long max_nics = 0;   // the most NICs this radix, tier count and rail count connect
};

// Throws std::invalid_argument naming the key path for any unsound value common to all
// topologies (cluster.nodes, cluster.nics_per_node, cluster.nic, latencies).
void check_common(const FabricConfig& c);

// Checks the Clos parameters and the size limit; returns the shape.
ClosShape clos_shape(const FabricConfig& c);

// "key: got V, expected E".
[[noreturn]] void bad_value(const std::string& key, const std::string& got, const std::string& expected);

}  // namespace ct::topology::detail
