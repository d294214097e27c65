// A collective group laid out by NVLink domain (the node, or an NVL72 rack: Cluster::domain_of): ranks sorted
// by (node, local) = by global rank, with the slice of each node. Validation names the offending rank.
#pragma once

#include <span>
#include <vector>

#include "models/network/cluster.h"

namespace ct::collective {

struct Layout {
  std::vector<int> ranks;       // ascending global rank
  std::vector<int> node_begin;  // node slot i holds ranks[node_begin[i] .. node_begin[i+1])
  [[nodiscard]] int node_slots() const { return static_cast<int>(node_begin.size()) - 1; }
  [[nodiscard]] int size() const { return static_cast<int>(ranks.size()); }
  [[nodiscard]] std::span<const int> members(int slot) const {
    return {ranks.data() + node_begin[static_cast<size_t>(slot)],
            ranks.data() + node_begin[static_cast<size_t>(slot) + 1]};
  }
  // Member `(anchor + t) mod k` of node slot i: the order in which channel `channel` of
  // `channels` visits the node (it enters and leaves through the anchor). With at least as many
  // channels as members the anchor is member channel mod k; with fewer (a full node of 8 GPUs
  // and 4 NICs: 4 channels) the anchors spread over the members, channel x k / channels, so
  // that each channel leaves by another GPU's rail and NIC, as NCCL's channels each take their
  // own NIC (members 0, 2, 4, 6: not 0-3, which would share two NICs and leave two idle).
  [[nodiscard]] int visit(int slot, int channel, int t, int channels) const {
    const auto m = members(slot);
    const int k = static_cast<int>(m.size());
    const int anchor = channels > 0 && channels < k ? channel * k / channels : channel % k;
    return m[static_cast<size_t>((anchor + t) % k)];
  }
};

// Throws std::invalid_argument: empty group, rank out of [0, gpu_count) or repeated (naming
// the rank). `seen` is scratch of gpu_count bytes, left all zero.
Layout make_layout(const network::Cluster& cluster, std::span<const int> group, std::vector<uint8_t>& seen);

}  // namespace ct::collective
