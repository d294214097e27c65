#include "models/collective/ring.h"

#include <algorithm>

namespace ct::collective {

sim::Duration ring_legs(const network::Network& net, const Layout& layout, int channels,
                        std::vector<network::Leg>& legs) {
  const int nodes = layout.node_slots();
  sim::Duration h = sim::Duration::zero();
  if (nodes == 1) {
    const int k = layout.size();
    if (k < 2) return h;
    for (int c = 0; c < channels; ++c) {
      sim::Duration sum = sim::Duration::zero();
      for (int t = 0; t < k; ++t) {
        const network::Leg leg{layout.visit(0, c, t, channels), layout.visit(0, c, t + 1, channels)};
        legs.push_back(leg);
        sum += net.path_latency(leg.src_gpu, leg.dst_gpu);
      }
      h = std::max(h, sum / k);
    }
    return h;
  }
  for (int c = 0; c < channels; ++c) {
    sim::Duration sum = sim::Duration::zero();
    int hops = 0;
    for (int i = 0; i < nodes; ++i) {
      const int k = static_cast<int>(layout.members(i).size());
      const int anchor = layout.visit(i, c, 0, channels);
      sim::Duration relay = sim::Duration::zero();
      for (int t = 0; t + 1 < k; ++t) {
        const network::Leg leg{layout.visit(i, c, t, channels), layout.visit(i, c, t + 1, channels)};
        legs.push_back(leg);
        sum += net.path_latency(leg.src_gpu, leg.dst_gpu);
        ++hops;
      }
      if (k > 1) {  // PXN: the last member hands over to the anchor, on rail c
        const network::Leg leg{layout.visit(i, c, k - 1, channels), anchor};
        legs.push_back(leg);
        relay = net.path_latency(leg.src_gpu, leg.dst_gpu);
      }
      const int next = layout.visit((i + 1) % nodes, c, 0, channels);
      legs.push_back(network::Leg{anchor, next});
      sum += relay + net.path_latency(anchor, next);
      ++hops;
    }
    h = std::max(h, sum / hops);
  }
  return h;
}

}  // namespace ct::collective
