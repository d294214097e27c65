// Internal: how generators add vertices and cables to a Topology. Not part of the public API.
#pragma once

#include <string>
#include <vector>

#include "models/topology/topology.h"
#include "sim/units.h"

namespace ct::topology {

class TopologyBuilder {
 public:
  // Creates the NIC vertices 0 .. nodes * nics_per_node - 1, named "node<N>.nic<R>".
  TopologyBuilder(int nodes, int nics_per_node, int planes);

  // tier 0 means "infer": 1 + hops to the nearest switch that has a NIC attached.
  VertexId add_switch(std::string name, int tier, int plane, int pod, int index,
                      sim::Duration switch_latency);
  // Adds cable a<->b; returns its first direction (a->b); the second is a->b + 1.
  LinkDir add_link(VertexId a, VertexId b, sim::Bandwidth rate, sim::Duration latency);
  [[nodiscard]] int vertex_count() const { return static_cast<int>(t_.vertices_.size()); }
  void reserve_links(size_t cables);

  // Builds the adjacency arrays, the Boost graph, the name index and the routing tables.
  Topology finish();

 private:
  Topology t_;
  std::vector<sim::Duration> switch_latency_;
  std::vector<sim::Duration> link_latency_;
};

}  // namespace ct::topology
