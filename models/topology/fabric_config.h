// Typed configuration of the network fabric, as the scenario layer hands it to the topology
// generators (models never read scenario files themselves). Field names follow the scenario
// keys under `cluster` and `cluster.fabric`; error messages name those key paths.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/units.h"

namespace ct::topology {

// One cable of an `explicit` fabric, between two vertices named in the scenario. NIC names
// are "node<N>.nic<R>"; any other name is a switch. Unset rate/latency use the fabric's.
struct ExplicitLink {
  std::string a;
  std::string b;
  std::optional<sim::Bandwidth> rate;
  std::optional<sim::Duration> latency;
};

struct FabricConfig {
  std::string topology = "rail_optimized";               // rail_optimized | fat_tree | multi_plane | explicit
  int tiers = 3;                                         // 2 or 3 switch tiers (generated fabrics)
  int switch_radix = 128;                                // ports per switch, even, >= 2
  double oversubscription = 1.0;                         // leaf downlinks : uplinks, >= 1
  int planes = 1;                                        // multi_plane only: independent parallel fabrics
  std::string routing = "ecmp";                          // ecmp | dmodk (Topology's Routing)
  sim::Bandwidth link_rate = sim::Bandwidth::gbps(400);  // NIC rate (cluster.nic)
  sim::Duration link_latency = sim::Duration::ns(500);
  sim::Duration switch_latency = sim::Duration::ns(600);
  int nodes = 1280;                 // cluster.nodes
  int nics_per_node = 8;            // cluster.nics_per_node (rails)
  std::vector<ExplicitLink> links;  // explicit only (cluster.fabric.links)
};

}  // namespace ct::topology
