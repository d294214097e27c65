#include "models/collective/layout.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ct::collective {

Layout make_layout(const network::Cluster& cluster, std::span<const int> group, std::vector<uint8_t>& seen) {
  if (group.empty()) throw std::invalid_argument("collective: the group is empty");
  seen.resize(static_cast<size_t>(cluster.gpu_count()), 0);
  Layout out;
  out.ranks.reserve(group.size());
  std::string error;
  for (const int g : group) {
    if (g < 0 || g >= cluster.gpu_count()) {
      error = "collective: rank " + std::to_string(g) + " is not a GPU of the cluster [0, " +
              std::to_string(cluster.gpu_count()) + ")";
      break;
    }
    if (seen[static_cast<size_t>(g)]) {
      error = "collective: rank " + std::to_string(g) + " appears twice in the group";
      break;
    }
    seen[static_cast<size_t>(g)] = 1;
    out.ranks.push_back(g);
  }
  for (const int g : out.ranks) seen[static_cast<size_t>(g)] = 0;
  if (!error.empty()) throw std::invalid_argument(error);
  std::sort(out.ranks.begin(), out.ranks.end());
  for (size_t i = 0; i < out.ranks.size(); ++i) {
    if (i == 0 || cluster.domain_of(out.ranks[i]) != cluster.domain_of(out.ranks[i - 1])) {
      out.node_begin.push_back(static_cast<int>(i));
    }
  }
  out.node_begin.push_back(static_cast<int>(out.ranks.size()));
  return out;
}

}  // namespace ct::collective
