// Dispatch of FabricConfig::topology to its generator.
#include <string>

#include "models/topology/clos_shape.h"
#include "models/topology/topology.h"

namespace ct::topology {

namespace detail {
Topology build_clos(const FabricConfig& c);
Topology build_explicit(const FabricConfig& c);
}  // namespace detail

namespace {
Routing routing_of(const FabricConfig& config) {
  if (config.routing == "ecmp") return Routing::ecmp;
  if (config.routing == "dmodk") return Routing::dmodk;
  detail::bad_value("cluster.fabric.routing", "'" + config.routing + "'", "one of ecmp, dmodk");
}

Topology with_routing(Topology t, Routing r) {
  if (r != Routing::ecmp) t.set_routing(r);
  return t;
}
}  // namespace

Topology build_fabric(const FabricConfig& config) {
  detail::check_common(config);
  const Routing routing = routing_of(config);
  const std::string& t = config.topology;
  if (t == "rail_optimized" || t == "fat_tree" || t == "multi_plane") {
    return with_routing(detail::build_clos(config), routing);
  }
  if (t == "explicit") return with_routing(detail::build_explicit(config), routing);
  detail::bad_value("cluster.fabric.topology", "'" + t + "'",
                    "one of rail_optimized, fat_tree, multi_plane, explicit");
}

void check_fabric(const FabricConfig& config) {
  detail::check_common(config);
  (void)routing_of(config);
  const std::string& t = config.topology;
  if (t == "rail_optimized" || t == "fat_tree" || t == "multi_plane") {
    detail::clos_shape(config);
    return;
  }
  build_fabric(config);
}

int switch_count(const FabricConfig& config) {
  const std::string& t = config.topology;
  if (t == "rail_optimized" || t == "fat_tree" || t == "multi_plane") {
    const detail::ClosShape s = detail::clos_shape(config);
    const int spines = s.tiers == 3 ? s.spines * s.pods : s.spines;
    const int cores = s.tiers == 3 ? s.cores_per_group * s.spines : 0;
    return s.planes * (s.leaves + spines + cores);
  }
  return build_fabric(config).switch_count();
}

}  // namespace ct::topology
