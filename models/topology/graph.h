// Internal: the Boost.Graph view of a Topology. Only .cpp files include this header.
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include "models/topology/topology.h"

namespace ct::topology {

// Edge property: the cable index (its directions are 2 * cable and 2 * cable + 1).
struct CableProperty {
  int32_t cable = 0;
};

using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property, CableProperty>;

struct BoostGraph {
  Graph g;
};

}  // namespace ct::topology
