#include "models/collective/tree.h"

#include <algorithm>
#include <bit>

namespace ct::collective {

TreeShape tree_legs(const network::Network& net, const Layout& layout, int channels,
                    std::vector<network::Leg>& legs) {
  const int nodes = layout.node_slots();
  TreeShape shape;
  int k_max = 1;
  for (int i = 0; i < nodes; ++i) k_max = std::max(k_max, static_cast<int>(layout.members(i).size()));
  const int depth = static_cast<int>(std::bit_width(static_cast<unsigned>(nodes))) - 1;
  shape.steps = 2 * (depth + k_max - 1);
  auto add = [&](int a, int b) {
    legs.push_back(network::Leg{a, b});
    shape.max_leg_latency = std::max(shape.max_leg_latency, net.path_latency(a, b));
  };
  for (int c = 0; c < channels; ++c) {
    for (int tree = 0; tree < 2; ++tree) {
      for (int i = 0; i < nodes; ++i) {
        const int k = static_cast<int>(layout.members(i).size());
        for (int t = 0; t + 1 < k; ++t) {  // intra-node chain, up and down
          add(layout.visit(i, c, t + 1), layout.visit(i, c, t));
          add(layout.visit(i, c, t), layout.visit(i, c, t + 1));
        }
        const int pos = tree == 0 ? i : nodes - 1 - i;
        if (pos == 0) continue;  // root
        const int parent_pos = (pos - 1) / 2;
        const int parent = tree == 0 ? parent_pos : nodes - 1 - parent_pos;
        add(layout.visit(i, c, 0), layout.visit(parent, c, 0));  // reduce up
        add(layout.visit(parent, c, 0), layout.visit(i, c, 0));  // broadcast down
      }
    }
  }
  return shape;
}

}  // namespace ct::collective
