#include <stdexcept>
#include <string>

#include "models/network/analytical_network.h"
#include "models/network/flow_network.h"
#include "models/network/network.h"

namespace ct::network {

std::unique_ptr<Network> make_network(std::string_view mode, sim::Simulation& sim,
                                      const Cluster& cluster, NetworkParams params) {
  if (mode == "analytical") return std::make_unique<AnalyticalNetwork>(sim, cluster, params);
  if (mode == "flow") return std::make_unique<FlowNetwork>(sim, cluster, params);
  if (mode == "packet") {
    throw std::invalid_argument("network.mode: \"packet\" is not built yet; use \"analytical\" or \"flow\"");
  }
  throw std::invalid_argument("network.mode: got \"" + std::string(mode) +
                              "\", expected \"analytical\" or \"flow\"");
}

}  // namespace ct::network
