#include "models/collective/tree.h"

#include <algorithm>
#include <bit>

namespace ct::collective {

namespace {

// NCCL's binary tree over ranks 0..n-1 (trees.cc ncclGetBtree): in-order, so every subtree is
// a contiguous range of ranks and most edges join neighbours (nodes under the same leaf
// switch); rank 0 is the root with the single child 2^floor(log2(n-1)).
int btree_parent(int n, int r) {
  if (r == 0) return -1;
  int bit = 1;
  while (bit < n && !(bit & r)) bit <<= 1;
  int up = (r ^ bit) | (bit << 1);
  if (up >= n) up = r ^ bit;
  return up;
}

// The second tree of NCCL's double binary tree (ncclGetDtree): the mirror image for an even
// number of ranks, the first tree shifted by one for an odd number.
int dtree_parent(int n, int r, int tree) {
  if (tree == 0) return btree_parent(n, r);
  if (n % 2 == 1) {
    const int p = btree_parent(n, (r - 1 + n) % n);
    return p < 0 ? -1 : (p + 1) % n;
  }
  const int p = btree_parent(n, n - 1 - r);
  return p < 0 ? -1 : n - 1 - p;
}

}  // namespace

TreeShape tree_legs(const network::Network& net, const Layout& layout, int channels,
                    std::vector<network::Leg>& legs) {
  const int nodes = layout.node_slots();
  TreeShape shape;
  int k_max = 1;
  for (int i = 0; i < nodes; ++i) k_max = std::max(k_max, static_cast<int>(layout.members(i).size()));
  int depth = 0;
  for (int tree = 0; tree < 2; ++tree) {
    for (int i = 0; i < nodes; ++i) {
      int d = 0;
      for (int j = i; dtree_parent(nodes, j, tree) >= 0; j = dtree_parent(nodes, j, tree)) ++d;
      depth = std::max(depth, d);
    }
  }
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
          add(layout.visit(i, c, t + 1, channels), layout.visit(i, c, t, channels));
          add(layout.visit(i, c, t, channels), layout.visit(i, c, t + 1, channels));
        }
        const int parent = dtree_parent(nodes, i, tree);
        if (parent < 0) continue;                                                    // root
        add(layout.visit(i, c, 0, channels), layout.visit(parent, c, 0, channels));  // reduce up
        add(layout.visit(parent, c, 0, channels), layout.visit(i, c, 0, channels));  // broadcast down
      }
    }
  }
  return shape;
}

}  // namespace ct::collective
