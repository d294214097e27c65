#include <stdexcept>
#include <string>

#include "models/network/analytical_network.h"
#include "models/network/flow_network.h"
#include "models/network/network.h"
#include "models/network/packet_network.h"

namespace ct::network {

void Network::reroute_after_failure(sim::Duration /*retransmit_timeout*/) {
  throw std::invalid_argument("a fabric link failure inside a run is simulated in network.mode flow only");
}

std::unique_ptr<Network> make_network(std::string_view mode, sim::Simulation& sim, const Cluster& cluster,
                                      NetworkParams params) {
  if (mode == "analytical") return std::make_unique<AnalyticalNetwork>(sim, cluster, params);
  if (mode == "flow") return std::make_unique<FlowNetwork>(sim, cluster, params);
  // Packet mode with default PacketParams (ECN, PFC, DCQCN, 64 MiB switch buffers); build a
  // PacketNetwork directly to choose them.
  if (mode == "packet") return std::make_unique<PacketNetwork>(sim, cluster, params);
  throw std::invalid_argument("network.mode: got \"" + std::string(mode) +
                              "\", expected \"analytical\", \"flow\" or \"packet\"");
}

std::unique_ptr<Network> make_network(std::string_view mode, sim::Simulation& sim, const Cluster& cluster,
                                      NetworkParams params, const PacketParams& packet) {
  if (mode == "packet") return std::make_unique<PacketNetwork>(sim, cluster, params, packet);
  return make_network(mode, sim, cluster, params);
}

}  // namespace ct::network
