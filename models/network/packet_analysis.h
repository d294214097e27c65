// Analysis helpers of the packet backend.
//
// Cyclic buffer dependency (Dally & Seitz; Hu et al., "Deadlocks in Datacenter Networks",
// HotNets'16): with PFC, a packet held in the buffer of the port it entered waits for the
// egress it leaves by. The channel dependency graph has a vertex per link direction and an
// edge d1 -> d2 when some lossless flow crosses d1 then d2. PFC can deadlock only when that
// graph has a cycle; up/down routing in a Clos (up, then down, never up again) has none.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace ct::network {

// One directed cycle of the graph on vertices [0, vertex_count) (vertices in cycle order, the
// first not repeated), or empty when the graph is acyclic. Iterative DFS, O(V + E); edges
// with an end outside the range throw std::out_of_range.
std::vector<int32_t> find_cycle(int32_t vertex_count, std::span<const std::pair<int32_t, int32_t>> edges);

// Jain's fairness index (sum x)^2 / (n sum x^2), in (0, 1]; 1 for an empty set.
double jain_index(std::span<const double> x);

}  // namespace ct::network
