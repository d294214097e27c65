// NCCL-style double binary tree all-reduce as one pipelined chain.
//
// Across nodes: NCCL's double binary tree over the node slots 0..N-1 (trees.cc): tree 0 is
// the in-order binary tree (slot r's parent: clear r's lowest set bit b and set 2b; subtrees
// are contiguous ranges, so most edges join neighbouring nodes), tree 1 its mirror image
// (even N) or its shift by one (odd N), so the interior slots of one tree are leaves of the
// other.
// Inside a node the data runs along a chain anchor -> ... -> last member (reduce goes up the
// chain to the anchor, broadcast comes back down). Each tree carries half the buffer, and
// each channel (rail, as in ring.h) 1/C of that: every tree edge and chain edge moves
// S / (2C) up (reduce) and S / (2C) down (broadcast), pipelined. Both trees and all channels
// are legs of one chain (they progress at the same pace; an interior node's NIC carries
// 3 legs of one tree + 1 of the other, which the chain's coefficients express).
//   steps = 2 (depth + k - 1),  depth = the deeper tree's height, k = largest node slice
//   T = steps x (step_latency + h) + steps x chunk / rate + (S / 2C) / rate
// The middle term is the pipeline fill with chunks of `tree_chunk` bytes.
#pragma once

#include <vector>

#include "models/collective/layout.h"
#include "models/network/network.h"
#include "sim/units.h"

namespace ct::collective {

struct TreeShape {
  sim::Duration max_leg_latency;
  int steps = 0;
};

// Appends the legs of both trees for `channels` channels (node_slots() >= 2).
TreeShape tree_legs(const network::Network& net, const Layout& layout, int channels,
                    std::vector<network::Leg>& legs);

}  // namespace ct::collective
