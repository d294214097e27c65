// Hierarchical NCCL-style rings as one pipelined chain.
//
// Group ordered by (node, local). With C channels, channel c crosses every node once: it
// enters at the node's anchor (member c mod k, which is the GPU on rail c when the node's
// whole 8-GPU set is in the group; with fewer channels than members, member c k / C, so that
// 4 channels of an 8-GPU, 4-NIC node leave by GPUs 0, 2, 4, 6 and each by its own NIC:
// Layout::visit), visits the other members over NVLink, and leaves through
// the anchor's NIC: the last member hands its data to the anchor over NVLink (the PXN relay
// leg) and the anchor sends NIC c -> NIC c of the next node (same rail). A group inside one
// node is a plain NVLink ring. Channel c carries bytes / C.
//
// Ring algorithm (n ranks, S bytes per rank): every ring edge carries
//   k S / C,  k = 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter), 1 (broadcast)
// in steps = 2(n-1) (all_reduce) or n-1 chunks. In a synchronous pipelined ring every edge
// moves the same bytes at the pace of the slowest edge: that is the chain's common rate; the
// C channels are legs of the same chain (they run in lock-step; one variable also makes the
// alpha-beta backend see the channels sharing each GPU's NVLink port). Contention with other
// traffic is resolved by the network (max-min in flow mode).
//   T = steps x (step_latency + h) + k S / (C x rate),  h = the mean ring-edge latency of the
//   slowest channel: a chunk goes round the ring hop by hop, so its latency is the sum of the
//   hops it crosses (steps x the mean), not steps x the worst hop (which made a 128-node
//   ring pay the cross-leaf latency at every NVLink hop).
// Broadcast uses the closed ring too (NCCL's edge back into the root idles; it matters only
// when that edge alone is the bottleneck).
#pragma once

#include <vector>

#include "models/collective/layout.h"
#include "models/network/network.h"
#include "sim/units.h"

namespace ct::collective {

// Appends the legs of `channels` ring channels; returns h, the largest over channels of the
// mean ring-edge latency (a relayed edge counts the NVLink relay plus the inter-node path).
sim::Duration ring_legs(const network::Network& net, const Layout& layout, int channels,
                        std::vector<network::Leg>& legs);

}  // namespace ct::collective
